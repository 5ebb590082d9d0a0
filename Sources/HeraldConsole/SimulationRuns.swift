import HeraldConsoleCore
import Logging
import ServiceLifecycle
import Synchronization

/// The simulations started from the console: one plays at a time (each runs a whole stack in
/// this process), in this service's task, so a node's shutdown ends the one playing; the last
/// runs are kept with their steps for their pages.
final class SimulationRuns: Service, Sendable {
    enum RunState: String, Sendable {
        case waiting, running, finished, failed
    }

    struct Run: Sendable {
        var id: String
        var flow: String
        /// The operator who started it.
        var by: String
        var state: RunState
        var steps: [SimulationStep] = []
        /// The flow's summary line, or why it failed.
        var summary: String?
    }

    private struct State: Sendable {
        var runs: [Run] = []
        var next = 1
        /// Who waits for a run's changes (its page's stream), by a number of their own.
        var watchers: [Int: (run: String, continuation: AsyncStream<Void>.Continuation)] = [:]
        var nextWatcher = 0
    }

    let simulator: (any ConsoleSimulator)?
    private let logger: Logger
    private let state = Mutex(State())
    private let requests: AsyncStream<String>
    private let requested: AsyncStream<String>.Continuation
    /// Runs kept for their pages; older ones are forgotten.
    static let kept = 20

    init(simulator: (any ConsoleSimulator)?, logger: Logger) {
        self.simulator = simulator
        self.logger = logger
        (requests, requested) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    /// The runs, newest first.
    var runs: [Run] { state.withLock { $0.runs.reversed() } }

    func run(id: String) -> Run? { state.withLock { $0.runs.first { $0.id == id } } }

    /// A signal each time run `id` changes (a step, its state), starting with one now; it ends
    /// with the node (or when its reader goes).
    func changes(of id: String) -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let number = state.withLock { state in
            let number = state.nextWatcher
            state.nextWatcher += 1
            state.watchers[number] = (id, continuation)
            return number
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.watchers.removeValue(forKey: number) }
        }
        continuation.yield()
        return stream
    }

    /// Queues `flow` for `by`; refused while another run waits or plays (one stack at a time).
    func start(flow: String, by: String) throws(ConsoleError) -> String {
        guard let simulator, simulator.flows.contains(where: { $0.name == flow }) else {
            throw .badRequest("there is no simulation named \(flow) here")
        }
        let id = try state.withLock { state throws(ConsoleError) -> String in
            if state.runs.contains(where: { $0.state == .waiting || $0.state == .running }) {
                throw .tooManyRequests("a simulation is playing; start another when it has ended")
            }
            let id = "run-\(state.next)"
            state.next += 1
            state.runs.append(Run(id: id, flow: flow, by: by, state: .waiting))
            if state.runs.count > Self.kept { state.runs.removeFirst(state.runs.count - Self.kept) }
            return id
        }
        requested.yield(id)
        return id
    }

    func run() async throws {
        for await id in requests.cancelOnGracefulShutdown() {
            guard let simulator, let flow = run(id: id)?.flow else { continue }
            update(id) { $0.state = .running }
            do {
                let result = try await simulator.play(flow: flow) { [weak self] step in
                    self?.update(id) { $0.steps.append(step) }
                }
                update(id) {
                    $0.state = .finished
                    $0.summary = result.summary
                    $0.steps = result.steps
                }
            } catch {
                logger.warning("a console simulation failed", metadata: ["flow": "\(flow)", "error": "\(error)"])
                update(id) {
                    $0.state = .failed
                    $0.summary = "failed: \(error)"
                }
            }
        }
        requested.finish()
        let watchers = state.withLock { state in
            defer { state.watchers = [:] }
            return state.watchers.values.map(\.continuation)
        }
        for watcher in watchers { watcher.finish() }
    }

    private func update(_ id: String, _ change: (inout Run) -> Void) {
        let watchers = state.withLock { state -> [AsyncStream<Void>.Continuation] in
            guard let index = state.runs.firstIndex(where: { $0.id == id }) else { return [] }
            change(&state.runs[index])
            return state.watchers.values.filter { $0.run == id }.map(\.continuation)
        }
        for watcher in watchers { watcher.yield() }
    }
}
