/// One push network's health as the dispatcher sees it, as a state machine: events in, actions
/// out, no I/O (the dispatcher logs, records the gauge and wakes its loops).
///
/// - Healthy: the network's pushes are claimed with the rest.
/// - A batch whose pushes all came back `unreachable` (no connection could be made) marks the
///   network down: its pushes stay queued, each due as before, and count no attempt.
/// - While down, one push at a time is claimed as a probe, no sooner than `probeInterval` after
///   the last one came back (calls first: the claim's order). A probe the network answers in
///   any way (delivered, refused, even retry later) marks it healthy again, and the dispatcher
///   wakes every loop to drain the backlog at once.
/// - An answer about a batch sent before the latest change of state says nothing about now, and
///   is ignored: a slow batch from before an outage does not mark the network up, nor one from
///   before the recovery mark it down again.
public struct NetworkHealthMachine: Sendable {
    /// Where the network is; times in milliseconds since the epoch.
    public enum State: Sendable, Hashable {
        /// Answering since `since`.
        case healthy(since: Int64)
        /// Unreachable since `since`. The next probe may be claimed at `nextProbeAt`, unless one
        /// is out (`probing`).
        case down(since: Int64, nextProbeAt: Int64, probing: Bool)
    }

    /// What happened.
    public enum Event: Sendable, Hashable {
        /// The network answered a batch sent at `sentAt` (at least one push got an answer from it).
        case answered(sentAt: Int64, at: Int64)
        /// No push of a batch sent at `sentAt` reached the network.
        case unreachable(sentAt: Int64, at: Int64, reason: String)
        /// A probe found nothing to learn from: no push of the network was due, or the one sent
        /// expired on the way. The next probe goes after the interval.
        case nothingToProbe(at: Int64)
    }

    /// What the dispatcher must do.
    public enum Action: Sendable, Hashable {
        /// The network just went down: log a warning, record the gauge.
        case wentDown(reason: String)
        /// The network answers again after being down `downFor` milliseconds: log, record the
        /// gauge, wake every loop.
        case cameBack(downFor: Int64)
    }

    public private(set) var state: State
    /// How long, in milliseconds, between a probe's return and the next.
    public let probeInterval: Int64

    /// A healthy network (as every network is at start).
    public init(probeInterval: Int64, now: Int64) {
        self.probeInterval = probeInterval
        state = .healthy(since: now)
    }

    /// Whether the network's pushes are claimed with the rest.
    public var isHealthy: Bool {
        if case .healthy = state { return true }
        return false
    }

    /// When the next probe may go, while down and no probe is out; nil otherwise.
    public var nextProbeAt: Int64? {
        guard case .down(_, let next, false) = state else { return nil }
        return next
    }

    /// Takes the probe if one is due at `now` (the caller then claims one push of the network).
    public mutating func startProbe(at now: Int64) -> Bool {
        guard case .down(let since, let next, false) = state, next <= now else { return false }
        state = .down(since: since, nextProbeAt: next, probing: true)
        return true
    }

    public mutating func handle(_ event: Event) -> Action? {
        switch (state, event) {
        case (.healthy(let since), .unreachable(let sentAt, let at, let reason)):
            guard sentAt >= since else { return nil }
            state = .down(since: at, nextProbeAt: at + probeInterval, probing: false)
            return .wentDown(reason: reason)
        case (.healthy, .answered), (.healthy, .nothingToProbe):
            return nil
        case (.down(let since, _, _), .answered(let sentAt, let at)):
            guard sentAt >= since else { return nil }
            state = .healthy(since: at)
            return .cameBack(downFor: at - since)
        case (.down(let since, _, _), .unreachable(_, let at, _)), (.down(let since, _, _), .nothingToProbe(let at)):
            // Still down (or nothing to try): the next probe after the interval.
            state = .down(since: since, nextProbeAt: at + probeInterval, probing: false)
            return nil
        }
    }
}
