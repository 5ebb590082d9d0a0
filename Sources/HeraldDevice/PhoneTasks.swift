import Synchronization

/// The emulated phone's long-lived work (the device connection, the heartbeat timer, the live
/// channel) as children of one task group, so that switching the phone off cancels every loop
/// and can wait until each has ended, instead of leaving loose tasks running behind it.
///
/// The group lives in one host task per phone, made at the first `start(_:)`: `launch()` returns
/// while the loops run and `shutdown()` is synchronous (tests call it from `defer`), so no caller
/// holds a scope the loops could live in. `cancelAll()` ends the host; the next `start(_:)` makes
/// a new one (a phone launched again).
final class PhoneTasks: Sendable {
    /// One job's switch: cancels that job alone (a timer restarted, a channel closed).
    struct Handle: Sendable {
        fileprivate let stop: AsyncStream<Void>.Continuation

        func cancel() { stop.finish() }
    }

    private struct Job: Sendable {
        let work: @Sendable () async -> Void
        let stop: AsyncStream<Void>
    }

    private struct State {
        var jobs: AsyncStream<Job>.Continuation?
        var host: Task<Void, Never>?
    }

    private let state = Mutex(State())

    init() {}

    deinit {
        state.withLock { state in
            state.jobs?.finish()
            state.host?.cancel()
        }
    }

    /// Runs `work` as a child of the phone's group until it returns, its handle is cancelled or
    /// the group is.
    @discardableResult
    func start(_ work: @escaping @Sendable () async -> Void) -> Handle {
        let (stop, stopper) = AsyncStream.makeStream(of: Void.self)
        state.withLock { state in
            if state.jobs == nil {
                let (jobs, continuation) = AsyncStream.makeStream(of: Job.self)
                state.jobs = continuation
                state.host = Task { await Self.host(jobs) }
            }
            state.jobs?.yield(Job(work: work, stop: stop))
        }
        return Handle(stop: stopper)
    }

    /// Cancels every job and the host; the returned task ends once all of them have.
    @discardableResult
    func cancelAll() -> Task<Void, Never>? {
        let host = state.withLock { state -> Task<Void, Never>? in
            defer { state = State() }
            state.jobs?.finish()
            return state.host
        }
        host?.cancel()
        return host
    }

    /// The group: each job races its own switch; the host's cancellation ends them all, and the
    /// group returns only once every child has.
    private static func host(_ jobs: AsyncStream<Job>) async {
        await withDiscardingTaskGroup { group in
            for await job in jobs {
                group.addTask {
                    await withTaskGroup(of: Void.self) { race in
                        race.addTask { await job.work() }
                        race.addTask { for await _ in job.stop {} }
                        await race.next()
                        race.cancelAll()
                    }
                }
            }
            group.cancelAll()
        }
    }
}
