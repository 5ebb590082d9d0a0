import DequeModule
import HeraldPush
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// N connections to APNs, each used up to the stream limit the server advertises, and a bounded
/// queue of requests waiting for a free stream.
///
/// The queue is the provider's backpressure: when APNs is slow or stalled, callers wait (up to
/// their timeout) while the queue has room, and are refused at once with `queueFull` when it does
/// not, so memory stays bounded however much the relay offers.
///
/// When each slot connects, backs off, drains or gives up is `APNsPoolStateMachine`'s to say;
/// this does the I/O. Every slot's connect loop, the first and each reconnect, runs in the task
/// group of `run()`.
final class APNsConnectionPool: Sendable {
    typealias Machine = APNsPoolStateMachine<APNsConnection>
    typealias Lease = Machine.Lease

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Lease, any Error>
        let timeout: Scheduled<Void>
    }

    private struct State {
        var machine: Machine
        var waiters = Deque<Waiter>()
        var nextWaiterID: UInt64 = 0
        /// Each slot's wait for the end of its backoff, while one waits.
        var sleepers: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    /// What the pool does once the lock is released, for the actions it took under it.
    private struct Effects {
        var resumed: [(Waiter, Lease)] = []
        var failed: [(Waiter, APNsClientError)] = []
        var woken: [CheckedContinuation<Void, Never>] = []
        var closed: [APNsConnection] = []
        var reconnects: [Int] = []
        var logs: [Machine.Action] = []
        /// The connect loop's next step: open, back off, or stop (nil: none).
        var step: Machine.Action?
        /// Backoffs the actions ended (`wake`).
        var wakes = 0
    }

    private let configuration: APNsClientConfiguration
    private let sslContext: NIOSSLContext
    private let group: any EventLoopGroup
    private let logger: Logger
    private let state: Mutex<State>
    /// Slots whose connection went away, for `run()` to reconnect.
    private let reconnects = AsyncStream<Int>.makeStream()

    init(configuration: APNsClientConfiguration, sslContext: NIOSSLContext, group: any EventLoopGroup, logger: Logger) {
        self.configuration = configuration
        self.sslContext = sslContext
        self.group = group
        self.logger = logger
        let machine = Machine(
            connections: configuration.connections,
            maximumStreamsPerConnection: configuration.maximumStreamsPerConnection,
            backoff: Backoff(base: configuration.reconnectBaseDelay, maximum: configuration.reconnectMaximumDelay)
        )
        state = Mutex(State(machine: machine))
    }

    /// Opens every connection and keeps them open: each slot's connect loop, and the reconnect
    /// of each connection that goes away, run in this task group. Returns once `shutdown()`
    /// stopped them (or the task is cancelled).
    func run() async {
        await withDiscardingTaskGroup { group in
            for slot in 0..<max(1, configuration.connections) {
                group.addTask { await self.connect(slot: slot) }
            }
            for await slot in reconnects.stream {
                group.addTask { await self.connect(slot: slot) }
            }
        }
    }

    /// Requests in flight across all connections.
    var inFlight: Int { state.withLock { $0.machine.inFlight } }

    /// Requests waiting for a stream.
    var queued: Int { state.withLock { $0.waiters.count } }

    /// A stream if one is free right now; nil otherwise (never waits).
    func tryLease() -> Lease? {
        state.withLock { $0.machine.take() }
    }

    /// A stream on some ready connection, waiting up to `timeout` for one to free up.
    func lease(timeout: TimeAmount) async throws -> Lease {
        enum Attempt {
            case leased(Lease)
            case wait
            case refused(APNsClientError)
        }
        let attempt = state.withLock { state -> Attempt in
            if state.machine.isShutdown { return .refused(.shutdown) }
            if let lease = state.machine.take() { return .leased(lease) }
            if let error = state.machine.unreachable, !state.machine.isBackingOff {
                // APNs has been unreachable for a while and every connection is already trying
                // again: say so now instead of at the timeout.
                return .refused(.connectFailed(error))
            }
            if state.waiters.count >= configuration.maxQueuedRequests { return .refused(.queueFull) }
            return .wait
        }
        switch attempt {
        case .leased(let lease): return lease
        case .refused(let error): throw error
        case .wait: break
        }
        let eventLoop = group.any()
        return try await withCheckedThrowingContinuation { continuation in
            var effects = Effects()
            defer { perform(effects) }
            let immediate = state.withLock { state -> Result<Lease, any Error>? in
                if state.machine.isShutdown { return .failure(APNsClientError.shutdown) }
                if let lease = state.machine.take() { return .success(lease) }
                // Checked again under this lock: others may have queued since the first check.
                if state.waiters.count >= configuration.maxQueuedRequests {
                    return .failure(APNsClientError.queueFull)
                }
                if let error = state.machine.unreachable {
                    // A connection waiting out its reconnect backoff tries again now, and this
                    // request waits for that attempt (whose failure fails it at once): after an
                    // outage the first request finds APNs back within one connection attempt,
                    // not after a backoff of up to 30 s. Kicked under the lock that queues the
                    // waiter, so the attempt cannot fail before the waiter is there to hear it.
                    effects = Self.apply(state.machine.handle(.kick), to: &state)
                    guard effects.wakes > 0 else { return .failure(APNsClientError.connectFailed(error)) }
                }
                state.nextWaiterID += 1
                let id = state.nextWaiterID
                let timeoutTask = eventLoop.scheduleTask(in: timeout) { [weak self] () -> Void in
                    self?.expireWaiter(id)
                }
                state.waiters.append(Waiter(id: id, continuation: continuation, timeout: timeoutTask))
                return nil
            }
            if let immediate { continuation.resume(with: immediate) }
        }
    }

    /// Gives the stream back, and hands it to the longest waiter.
    func release(_ lease: Lease) {
        let resumed = state.withLock { state -> [(Waiter, Lease)] in
            state.machine.release(lease)
            return Self.dispatch(&state)
        }
        resume(resumed)
    }

    /// Refuses new requests, fails those waiting, closes the connections and stops the connect
    /// loops (`run()` returns once those in an attempt are done with it).
    func shutdown() {
        handle(.shutdown)
        reconnects.continuation.finish()
    }

    // MARK: - The machine's actions

    /// Feeds the machine one event and does what it answers; the connect loop's next step, if
    /// it gave one.
    @discardableResult
    private func handle(_ event: Machine.Event) -> Machine.Action? {
        let effects = state.withLock { state in Self.apply(state.machine.handle(event), to: &state) }
        perform(effects)
        return effects.step
    }

    /// Does, under the lock, what must be atomic with the machine's change (waiters handed
    /// streams or failed, backoff waits ended); collects the rest.
    private static func apply(_ actions: [Machine.Action], to state: inout State) -> Effects {
        var effects = Effects()
        for action in actions {
            switch action {
            case .open, .backOff, .stopConnecting:
                effects.step = action
            case .reconnect(let slot):
                effects.reconnects.append(slot)
            case .wake(let slot):
                effects.wakes += 1
                if let sleeper = state.sleepers.removeValue(forKey: slot) { effects.woken.append(sleeper) }
            case .close(let connection):
                effects.closed.append(connection)
            case .dispatchWaiters:
                effects.resumed += dispatch(&state)
            case .failWaiters(let error):
                effects.failed += state.waiters.map { ($0, error) }
                state.waiters.removeAll()
            case .becameReady, .endedBeforeReady, .connectFailed:
                effects.logs.append(action)
            }
        }
        return effects
    }

    /// Does, outside the lock, what the actions left: wakes, closes, logs, resumes.
    private func perform(_ effects: Effects) {
        for sleeper in effects.woken { sleeper.resume() }
        for (waiter, error) in effects.failed {
            waiter.timeout.cancel()
            waiter.continuation.resume(throwing: error)
        }
        for connection in effects.closed { connection.close() }
        for slot in effects.reconnects { reconnects.continuation.yield(slot) }
        for action in effects.logs {
            switch action {
            case .becameReady(let slot):
                logger.debug("APNs connection ready", metadata: ["slot": "\(slot)"])
            case .endedBeforeReady(let slot):
                logger.debug("APNs connection ended before it was ready", metadata: ["slot": "\(slot)"])
            case .connectFailed(let slot, let failures, let error):
                // The first failure in a row is worth a warning; the rest of an outage would
                // repeat it at every probe (the relay says once that APNs is down).
                logger.log(
                    level: failures == 1 ? .warning : .debug,
                    "cannot connect to APNs",
                    metadata: ["slot": "\(slot)", "error": "\(error)", "failures": "\(failures)"]
                )
            default:
                break
            }
        }
        resume(effects.resumed)
    }

    private static func dispatch(_ state: inout State) -> [(Waiter, Lease)] {
        var resumed: [(Waiter, Lease)] = []
        while !state.waiters.isEmpty, let lease = state.machine.take() {
            resumed.append((state.waiters.removeFirst(), lease))
        }
        return resumed
    }

    private func resume(_ resumed: [(Waiter, Lease)]) {
        for (waiter, lease) in resumed {
            waiter.timeout.cancel()
            waiter.continuation.resume(returning: lease)
        }
    }

    private func expireWaiter(_ id: UInt64) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        waiter?.continuation.resume(throwing: APNsClientError.timeout)
    }

    // MARK: - Connect loops

    /// The slot's connect loop: opens a connection, backing off between failed attempts, until
    /// one is ready, the pool shuts down, or the task is cancelled.
    private func connect(slot: Int) async {
        var step = handle(.connect(slot: slot))
        while !Task.isCancelled, let action = step {
            switch action {
            case .open(_, let generation):
                do {
                    let connection = try await open(slot: slot, generation: generation)
                    step = handle(.opened(slot: slot, generation: generation, connection))
                } catch {
                    step = handle(.openFailed(slot: slot, error: "\(error)"))
                }
            case .backOff(_, let delay):
                await backOff(slot: slot, for: delay)
                step = handle(.backedOff(slot: slot))
            default:
                return
            }
        }
    }

    /// Opens a connection to APNs for the slot, its events handled as the generation's.
    private func open(slot: Int, generation: Int) async throws -> APNsConnection {
        try await APNsConnection.connect(
            host: configuration.host,
            port: configuration.port,
            sslContext: sslContext,
            serverHostname: configuration.serverHostname,
            group: group,
            connectTimeout: configuration.connectTimeout,
            pingInterval: configuration.pingInterval,
            logger: logger
        ) { [weak self] event in
            self?.handle(.connection(slot: slot, generation: generation, event))
        }
    }

    /// Sleeps for `delay`, or until the machine ends the backoff (a kick), or cancellation.
    private func backOff(slot: Int, for delay: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: delay) }
            group.addTask { await self.waitForWake(slot: slot) }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForWake(slot: Int) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.machine.isKicked(slot: slot) || Task.isCancelled { return true }
                    state.sleepers[slot] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: slot) }
            sleeper?.resume()
        }
    }
}
