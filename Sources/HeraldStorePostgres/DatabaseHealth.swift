/// Whether the database answers, as the store has seen it: events in, decisions out, no I/O.
///
/// While the database is down, calls fail at once instead of waiting in the connection pool
/// (which would hold each request for up to a minute); one call at a time, at most every
/// `probeInterval`, is let through as a probe, on a fresh connection. When a probe succeeds the
/// store starts a fresh pool (the old one would still be backing off its reconnects) and every
/// call goes through again.
struct DatabaseHealth: Sendable {
    enum State: Sendable, Equatable {
        case up
        /// Down since `since`; the next probe may start at `probeAt`.
        case down(since: ContinuousClock.Instant, probeAt: ContinuousClock.Instant)
        /// A probe is running.
        case probing(since: ContinuousClock.Instant)
    }

    /// What a call does now.
    enum Decision: Sendable, Equatable {
        case proceed
        /// Probe the database first; report the outcome with `probed(succeeded:at:)`.
        case probe
        /// Fail at once: the database is known to be down.
        case refuse(since: ContinuousClock.Instant)
    }

    /// What changed, for the log.
    enum Transition: Sendable, Equatable {
        case none
        case wentDown
        case cameBack(downFor: Duration)
    }

    private(set) var state = State.up
    let probeInterval: Duration

    init(probeInterval: Duration = .milliseconds(500)) {
        self.probeInterval = probeInterval
    }

    mutating func beforeCall(at now: ContinuousClock.Instant) -> Decision {
        switch state {
        case .up:
            return .proceed
        case .down(let since, let probeAt):
            guard now >= probeAt else { return .refuse(since: since) }
            state = .probing(since: since)
            return .probe
        case .probing(let since):
            return .refuse(since: since)
        }
    }

    /// A call could not reach the database (no connection within the time allowed, or the
    /// connection failed).
    mutating func unreachable(at now: ContinuousClock.Instant) -> Transition {
        switch state {
        case .up:
            state = .down(since: now, probeAt: now + probeInterval)
            return .wentDown
        case .down(let since, _), .probing(let since):
            state = .down(since: since, probeAt: now + probeInterval)
            return .none
        }
    }

    mutating func probed(succeeded: Bool, at now: ContinuousClock.Instant) -> Transition {
        guard case .probing(let since) = state else { return .none }
        if succeeded {
            state = .up
            return .cameBack(downFor: now - since)
        }
        state = .down(since: since, probeAt: now + probeInterval)
        return .none
    }
}
