import HeraldMacros

/// Exponential backoff between attempts: the ceiling starts at `base`, doubles per attempt and
/// stops at `maximum`; the wait is drawn below it (jitter) so that many senders failing together
/// do not come back together.
///
/// One policy for every retry in Herald: the APNs client and the FCM sender between attempts of a
/// push, the APNs pool between reconnects, the relay's dispatcher between outbox attempts.
@MemberwiseInit
public struct Backoff: Sendable, Hashable {
    /// How the wait is drawn below the ceiling.
    public enum Jitter: Sendable, Hashable {
        /// Anywhere from zero to the ceiling: spreads retries the most.
        case full
        /// From half the ceiling to the ceiling: spreads retries but never retries at once, for
        /// waits that must let the cause of the failure pass.
        case equal
    }

    /// The first attempt's ceiling.
    public var base: Duration
    /// The largest ceiling.
    public var maximum: Duration
    public var jitter: Jitter = .full

    /// The ceiling for the `attempt`th retry (1 for the first): base × 2^(attempt-1), at most
    /// `maximum`.
    public func ceiling(attempt: Int) -> Duration {
        // 2^20 × any sensible base is past any sensible maximum; the cap keeps the shift defined.
        let doublings = min(max(attempt - 1, 0), 20)
        return min(maximum, base * (1 << doublings))
    }

    /// A wait before the `attempt`th retry, drawn with the given generator.
    public func delay(attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let ceiling = max(0, ceiling(attempt: attempt).nanoseconds)
        let floor =
            switch jitter {
            case .full: Int64(0)
            case .equal: ceiling / 2
            }
        return .nanoseconds(Int64.random(in: floor...ceiling, using: &generator))
    }

    /// A wait before the `attempt`th retry.
    public func delay(attempt: Int) -> Duration {
        var generator = SystemRandomNumberGenerator()
        return delay(attempt: attempt, using: &generator)
    }
}

extension Duration {
    /// Whole nanoseconds (saturating past ±292 years).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
