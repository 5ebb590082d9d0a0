public import HeraldPush

/// Whether the dispatcher's outcome writes reach the store, as a state machine: events in,
/// actions out, no I/O (the dispatcher's `OutcomeWriter` writes, sleeps, logs and wakes loops).
///
/// - Every outcome the dispatcher learns is counted `pending` from the moment its loop hands it
///   over (to the outcome batcher, with other loops' finished outcomes, or to a write of its own)
///   until a write records it.
/// - A write that fails is tried again after `retryDelay(attempt:)` (100 ms doubling to 1 s,
///   equal jitter), for as long as the store fails: an outcome is what a push network said about
///   a send that happened, and a push whose outcome is lost is sent again when its lease ends.
/// - The first failure marks the store failing (one warning, with how many outcomes wait) and
///   holds the claims: while this node holds outcomes it could not write, its loops neither claim
///   nor take handed-over pushes. Why: once the store answers again, a claim could take back a
///   push whose lease lapsed during the outage before its outcome is written, and send it again.
///   The loops could not claim from a store that fails anyway.
/// - The first write that succeeds again ends the failure (one info line, with how long and how
///   many tries); the claims stay held until every pending outcome is written, then the loops
///   are woken.
/// - At a graceful stop writes are tried until a deadline only; outcomes given up then are
///   counted out (their pushes are sent again when their leases end, as after a crash).
public struct OutcomeWriteMachine: Sendable, Hashable {
    /// What happened; times in milliseconds since the epoch.
    public enum Event: Sendable, Hashable {
        /// A loop handed over `count` outcomes to be written.
        case handed(count: Int)
        /// A write of outcomes failed.
        case failed(at: Int64)
        /// A write recorded `count` outcomes.
        case written(count: Int, at: Int64)
        /// `count` outcomes were given up (the stop's deadline passed while the store failed).
        case gaveUp(count: Int, at: Int64)
    }

    /// What the writer must do.
    public enum Action: Sendable, Hashable {
        /// Writes just started failing with `pending` outcomes unwritten: log a warning once.
        case startedFailing(pending: Int)
        /// Writes succeed again after failing for `downFor` milliseconds and `failures` tries:
        /// log once.
        case recovered(downFor: Int64, failures: Int)
        /// Outcomes were given up: log an error with how many.
        case gaveUp(count: Int)
        /// Every outcome held since the failure is written (or given up): wake every loop.
        case resumeClaims
    }

    /// Outcomes handed over and not yet written nor given up.
    public private(set) var pending = 0
    /// Writes failing: since when, and how many tries failed since.
    public struct Failure: Sendable, Hashable {
        public var since: Int64
        public var failures: Int
    }

    /// Nil while writes succeed.
    public private(set) var failing: Failure?
    /// Whether the loops must not claim: a write failed, and what was pending then (or handed
    /// over since) is not all written yet.
    public private(set) var holdsClaims = false
    /// The wait before a failed write is tried again.
    public let backoff = Backoff(base: .milliseconds(100), maximum: .seconds(1), jitter: .equal)

    public init() {}

    /// The wait before the `attempt`th retry of one write (1 for the first).
    public func retryDelay(attempt: Int) -> Duration { backoff.delay(attempt: attempt) }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .handed(let count):
            pending += count
            return []
        case .failed(let at):
            holdsClaims = true
            if let failing {
                self.failing = Failure(since: failing.since, failures: failing.failures + 1)
                return []
            }
            failing = Failure(since: at, failures: 1)
            return [.startedFailing(pending: pending)]
        case .written(let count, let at):
            pending = max(0, pending - count)
            var actions: [Action] = []
            if let failing {
                self.failing = nil
                actions.append(.recovered(downFor: max(0, at - failing.since), failures: failing.failures))
            }
            return actions + release()
        case .gaveUp(let count, _):
            pending = max(0, pending - count)
            return [.gaveUp(count: count)] + release()
        }
    }

    /// Lets the loops claim again once nothing held since the failure waits.
    private mutating func release() -> [Action] {
        guard holdsClaims, pending == 0 else { return [] }
        holdsClaims = false
        return [.resumeClaims]
    }
}
