public import AsyncHTTPClient
import Metrics
public import NIOCore
import ServiceLifecycle

/// How a push network's HTTP sender (FCM, Push Kit) connects, fans out and retries; every field
/// has a working default. The senders' configurations carry one and read its fields as their own.
public struct PushSenderTuning: Sendable {
    /// A PEM CA file to trust instead of the system roots (the sandbox's).
    public var caCertificatePath: String?
    /// Sends in flight at once; more wait (HTTP/2 multiplexes them over one connection).
    public var maximumConcurrentSends: Int = 256
    /// How long one request may take before it counts as a connection failure.
    public var requestTimeout: Duration = .seconds(10)
    /// An access token is replaced this long before it expires (or at half its life, if shorter).
    public var tokenRefreshMargin: Duration = .seconds(5 * 60)
    /// Attempts per message before `retryLater` is answered (the relay then retries later).
    public var maximumAttempts: Int = 4
    /// Full-jitter backoff between attempts: base × 2^(n-1), capped.
    public var retryBaseDelay: Duration = .milliseconds(100)
    public var retryMaximumDelay: Duration = .seconds(10)

    public init() {}
}

/// What the FCM and Push Kit senders are built on: one HTTP client, the network's metrics and
/// rate-limited alerts, its access-token cache, the retry rules and the batch fan-out, all from
/// one `PushSenderTuning`. Each sender adds only its network's wire format and answers.
public final class PushHTTPSender: Sendable {
    public let http: HTTPClient
    public let metrics: PushClientMetrics
    /// Operator alerts of refusals for good, at most once a minute per kind.
    public let alerts = RateLimitedAlerts(interval: .seconds(60))
    public let retries: PushRetries
    public let tuning: PushSenderTuning

    /// - Parameter network: `fcm` or `hms`: the metrics' second word.
    public init(network: String, tuning: PushSenderTuning, group: any EventLoopGroup) {
        self.tuning = tuning
        http = HTTPClient.pushSender(caCertificatePath: tuning.caCertificatePath, group: group)
        metrics = PushClientMetrics(network: network)
        retries = PushRetries(
            maximumAttempts: tuning.maximumAttempts,
            baseDelay: tuning.retryBaseDelay,
            maximumDelay: tuning.retryMaximumDelay
        )
    }

    /// The access-token cache of this sender: `fetch` asks the token endpoint, counted as
    /// `herald_<network>_token_refreshes_total`.
    public func accessTokens(
        network: String,
        fetch: @escaping @Sendable () async throws -> AccessTokenCache.Grant
    ) -> AccessTokenCache {
        AccessTokenCache(
            margin: tuning.tokenRefreshMargin,
            refreshes: .init(label: "herald_\(network)_token_refreshes_total"),
            fetch: fetch
        )
    }

    /// The sender's service body: waits for graceful shutdown, then closes the connections.
    public func runUntilShutdown() async throws {
        try? await gracefulShutdown()
        try await http.shutdown()
    }

    /// Sends every item with `send`, at most `maximumConcurrentSends` at once; one result per
    /// item, in order.
    public func batch<Item: Sendable, Result: Sendable>(
        _ items: [Item],
        notSent: Result,
        _ send: @escaping @Sendable (Item) async -> Result
    ) async -> [Result] {
        await fanOut(items, width: tuning.maximumConcurrentSends, missing: notSent, send)
    }

    /// Posts `request` to the network: counted, timed, and bounded by the request timeout.
    public func post(_ request: HTTPClientRequest, limit: Int) async throws(PushTransportError) -> HTTPAnswer {
        try await http.answer(to: request, timeout: tuning.requestTimeout, limit: limit, metrics: metrics)
    }
}

/// A sender's configuration that carries a `PushSenderTuning`: its fields read and set as the
/// configuration's own (`configuration.retryBaseDelay`).
@dynamicMemberLookup
public protocol PushSenderConfiguration: Sendable {
    var tuning: PushSenderTuning { get set }
}

extension PushSenderConfiguration {
    public subscript<Value>(dynamicMember field: WritableKeyPath<PushSenderTuning, Value>) -> Value {
        get { tuning[keyPath: field] }
        set { tuning[keyPath: field] = newValue }
    }
}
