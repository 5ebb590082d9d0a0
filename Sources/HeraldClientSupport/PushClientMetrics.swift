public import Metrics
import Synchronization

/// The swift-metrics instruments of a push network's client, named `herald_<network>_…`: the
/// APNs client and the FCM sender count the same things the same way.
public struct PushClientMetrics: Sendable {
    /// Requests sent, first attempts and retries alike.
    public let sent: Counter
    /// Pushes the network accepted.
    public let delivered: Counter
    /// Attempts after the first.
    public let retries: Counter
    /// Requests on the wire.
    public let inFlight: Meter
    /// From sending a request to its answer.
    public let latency: Metrics.Timer
    private let network: String

    /// - Parameter network: `apns` or `fcm`, the label's second word.
    public init(network: String) {
        self.network = network
        sent = Counter(label: "herald_\(network)_sent_total")
        delivered = Counter(label: "herald_\(network)_delivered_total")
        retries = Counter(label: "herald_\(network)_retries_total")
        inFlight = Meter(label: "herald_\(network)_in_flight")
        latency = Metrics.Timer(
            label: "herald_\(network)_request_duration_seconds",
            preferredDisplayUnit: .milliseconds
        )
    }

    /// Counts a push that did not get through, by reason.
    public func failed(reason: String) {
        Counter(label: "herald_\(network)_failed_total", dimensions: [("reason", reason)]).increment()
    }
}

/// Lets an operator-visible alert through at most once per interval and kind, so a condition that
/// hits every push does not flood the log.
public final class RateLimitedAlerts: Sendable {
    private let interval: Duration
    private let last = Mutex<[String: ContinuousClock.Instant]>([:])

    public init(interval: Duration) {
        self.interval = interval
    }

    /// Whether an alert of this kind may be logged now (and, if so, starts its interval).
    public func shouldAlert(_ kind: String = "") -> Bool {
        let now = ContinuousClock.now
        return last.withLock { last in
            if let previous = last[kind], now - previous < interval { return false }
            last[kind] = now
            return true
        }
    }
}
