public import HeraldDomain
import Synchronization

/// The clock tests inject: real time plus an offset the test moves with `advance(by:)`, or, after
/// `freeze()` (or from `init(frozenAt:)`), a time that moves only when the test advances or sets
/// it (for exact boundaries). `sleep(until:)` returns once `now()` reads the deadline, whether
/// real time or the test brought it there: a timer set far ahead fires when the test moves the
/// clock, never by winning or losing a race with real time.
public final class TestClock: HeraldClock {
    private enum Waiter {
        case waiting(CheckedContinuation<Void, Never>)
        case cancelled
    }

    private struct State {
        var offset: Int64 = 0
        var frozenAt: Int64?
        /// Counts the advances, so that a sleeper that read the time before one knows it happened.
        var generation: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0

        var now: Int64 { frozenAt ?? WallClock().now() + offset }
    }

    private let state = Mutex(State())

    /// A clock running with real time until the test moves it or freezes it.
    public init() {}

    /// A clock frozen at `start` (milliseconds since the epoch): it moves only when the test
    /// advances it or sets it.
    public init(frozenAt start: Int64) {
        state.withLock { $0.frozenAt = start }
    }

    /// Milliseconds since the epoch.
    public func now() -> Int64 { state.withLock { $0.now } }

    /// How many `sleep(until:)` calls are waiting: a timer that woke on an advance and found
    /// its deadline not yet reached counts again once it has gone back to sleep.
    public var sleepers: Int {
        state.withLock { state in
            state.waiters.values.count { waiter in
                if case .waiting = waiter { true } else { false }
            }
        }
    }

    /// Stops real time: from now on the clock moves only when advanced.
    public func freeze() {
        state.withLock { state in state.frozenAt = state.now }
    }

    /// Moves the clock forward and wakes every sleeper to check its deadline again.
    public func advance(by duration: Duration) {
        let milliseconds = duration.milliseconds
        move { state in
            if let frozenAt = state.frozenAt {
                state.frozenAt = frozenAt + milliseconds
            } else {
                state.offset += milliseconds
            }
        }
    }

    /// Freezes the clock at `time` (milliseconds since the epoch; it may go back: a test
    /// decides) and wakes every sleeper to check its deadline again.
    public func set(_ time: Int64) {
        move { state in state.frozenAt = time }
    }

    /// Changes the time with `change`, then wakes every sleeper.
    private func move(_ change: (inout State) -> Void) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            change(&state)
            state.generation += 1
            defer { state.waiters.removeAll() }
            return state.waiters.values.compactMap { waiter in
                guard case .waiting(let continuation) = waiter else { return nil }
                return continuation
            }
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns once `now()` reads at least `deadline`; throws `CancellationError` when cancelled.
    public func sleep(until deadline: Int64) async throws {
        while true {
            let (remaining, generation, frozen) = state.withLock { state in
                (deadline - state.now, state.generation, state.frozenAt != nil)
            }
            guard remaining > 0 else { break }
            try Task.checkCancellation()
            // Whichever comes first: real time reaching the deadline, or an advance.
            await withTaskGroup(of: Void.self) { group in
                if !frozen { group.addTask { try? await Task.sleep(for: .milliseconds(remaining)) } }
                group.addTask { await self.advanced(since: generation) }
                await group.next()
                group.cancelAll()
            }
        }
        try Task.checkCancellation()
    }

    /// Returns after the first advance past `generation` (at once if there was one), or when
    /// the task is cancelled.
    private func advanced(since generation: UInt64) async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.generation != generation { return true }
                    if case .cancelled = state.waiters[id] {
                        state.waiters[id] = nil
                        return true
                    }
                    state.waiters[id] = .waiting(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if case .waiting(let continuation) = state.waiters.removeValue(forKey: id) { return continuation }
                // Not registered yet: the registration sees this and returns at once.
                state.waiters[id] = .cancelled
                return nil
            }
            waiting?.resume()
        }
    }
}
