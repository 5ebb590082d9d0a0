import Synchronization

/// Wakes a waiting loop; a signal with no waiter is kept for the next one.
public final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Wakes one waiting loop (or the next to wait): one loop claiming a batch beats every loop
    /// racing for the same few pushes. A loop that claims a full batch wakes the next itself.
    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let id = state.waiters.keys.min() else {
                state.pending = true
                return nil
            }
            return state.waiters.removeValue(forKey: id)
        }
        waiter?.resume()
    }

    /// Wakes every waiting loop (and the next to wait): a backlog that every loop should drain.
    public func signalAll() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.pending = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns on a signal, after `timeout`, or on cancellation; answers whether a signal (or
    /// the cancellation) ended it rather than the timeout.
    @discardableResult
    public func wait(timeout: Duration) async -> Bool {
        let consumed = state.withLock { state -> Bool in
            defer { state.pending = false }
            return state.pending
        }
        if consumed { return true }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            group.addTask {
                await self.waitForSignal()
                return true
            }
            let signalled = await group.next() ?? true
            group.cancelAll()
            return signalled
        }
    }

    private func waitForSignal() async {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}
