import Synchronization

/// The deadlines of the store's calls to the database, kept by one clock for all of them.
///
/// A call that waits too long for a connection, or gets no answer at all, must end without
/// waiting for the database. Two timers per call (one for each deadline) cost more than the
/// call itself at thousands of calls a second (a timer heap, wake-ups, thread hops, measured
/// with perf): instead every call is registered here, and one loop looks at them all every
/// `tick`, failing the late ones. A deadline is therefore met within a tick.
final class CallWatchdog: Sendable {
    /// Why a call was ended early.
    enum Lateness: Sendable {
        /// No connection within the wait allowed.
        case noConnection
        /// No answer within the hard limit.
        case noAnswer
    }

    private struct Call {
        var connectionBy: ContinuousClock.Instant
        var answerBy: ContinuousClock.Instant
        var leased = false
        var end: @Sendable (Lateness) -> Void
    }

    private struct State {
        var calls: [UInt64: Call] = [:]
        var nextID: UInt64 = 0
        var closed = false
    }

    private let state = Mutex(State())
    let tick: Duration

    init(tick: Duration = .milliseconds(100)) {
        self.tick = tick
    }

    /// Registers a call; `end` is called (once, from the watchdog's loop) if a deadline passes
    /// before `finished(_:)`.
    func register(
        connectionWithin: Duration,
        answerWithin: Duration,
        end: @escaping @Sendable (Lateness) -> Void
    ) -> UInt64 {
        let now = ContinuousClock.now
        return state.withLock { state in
            state.nextID += 1
            state.calls[state.nextID] = Call(
                connectionBy: now + connectionWithin,
                answerBy: now + answerWithin,
                end: end
            )
            return state.nextID
        }
    }

    /// The call has its connection: only the hard limit applies from now on.
    func leased(_ id: UInt64) {
        state.withLock { $0.calls[id]?.leased = true }
    }

    /// The call ended by itself.
    func finished(_ id: UInt64) {
        _ = state.withLock { $0.calls.removeValue(forKey: id) }
    }

    /// Ends the late calls every `tick` until cancelled.
    func run() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: tick)
            let now = ContinuousClock.now
            let late = state.withLock { state -> [(@Sendable (Lateness) -> Void, Lateness)] in
                var late: [(@Sendable (Lateness) -> Void, Lateness)] = []
                for (id, call) in state.calls {
                    if now >= call.answerBy {
                        late.append((call.end, .noAnswer))
                        state.calls[id] = nil
                    } else if !call.leased, now >= call.connectionBy {
                        late.append((call.end, .noConnection))
                        state.calls[id] = nil
                    }
                }
                return late
            }
            for (end, lateness) in late { end(lateness) }
        }
    }
}
