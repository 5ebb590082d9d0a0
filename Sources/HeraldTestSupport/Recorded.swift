import Synchronization

/// Things a test double records, in order, with a wait for the n-th instead of a sleep.
public final class Recorded<Element: Sendable>: Sendable {
    private struct State {
        var elements: [Element] = []
        var waiters: [UInt64: (count: Int, continuation: CheckedContinuation<Void, Never>)] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Everything recorded so far.
    public var all: [Element] { state.withLock { $0.elements } }

    /// Records `elements` and wakes the waits they complete.
    public func append(contentsOf elements: [Element]) {
        let ready = state.withLock { state in
            state.elements += elements
            let count = state.elements.count
            let ready = state.waiters.filter { $0.value.count <= count }
            for id in ready.keys { state.waiters.removeValue(forKey: id) }
            return ready.values.map(\.continuation)
        }
        for waiter in ready { waiter.resume() }
    }

    /// Returns everything recorded once there are at least `count` (or when the task is cancelled).
    @discardableResult
    public func wait(forCount count: Int) async -> [Element] {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if state.elements.count >= count || Task.isCancelled { return true }
                    state.waiters[id] = (count, continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume()
        }
        return all
    }

    /// Returns everything recorded once there are at least `count`, or throws `TimedOut` if
    /// there are fewer after `timeout`: the deadline guards against a hang; it is not a wait,
    /// since this returns as soon as the `count`-th arrives.
    @discardableResult
    public func wait(
        forCount count: Int,
        within timeout: Duration,
        _ what: String
    ) async throws -> [Element] {
        guard let recorded = try await withDeadline(timeout, { await self.wait(forCount: count) }),
            recorded.count >= count
        else { throw TimedOut(what: what, after: timeout) }
        return recorded
    }
}
