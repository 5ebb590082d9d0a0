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
final class APNsConnectionPool: Sendable {
    struct Lease: Sendable {
        let slot: Int
        let generation: Int
        let connection: APNsConnection
    }

    private enum SlotStatus {
        /// No connection; one is being made (or will be, after `retryAt`).
        case connecting
        case ready(APNsConnection)
        /// GOAWAY received: in-flight streams finish, nothing new is sent.
        case draining
    }

    private struct Slot {
        var status: SlotStatus = .connecting
        /// Bumped for every new connection, so a release for an old one is ignored.
        var generation = 0
        var inFlight = 0
        var limit = 1
        var failures = 0
        /// Waiting out the reconnect backoff (a kick ends the wait early).
        var napping = false
        var kicked = false
        var sleeper: CheckedContinuation<Void, Never>?
        /// The connection being made went away (GOAWAY or closed) before it was ready: its
        /// events can come before `connect` returns, and a connection marked ready after them
        /// would refuse every request leased to it.
        var endedWhileConnecting = false
    }

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Lease, any Error>
        let timeout: Scheduled<Void>
    }

    private struct State {
        var slots: [Slot]
        var waiters = Deque<Waiter>()
        var nextWaiterID: UInt64 = 0
        var shutdown = false
        var lastConnectError: String?
    }

    private let configuration: APNsClientConfiguration
    private let sslContext: NIOSSLContext
    private let group: any EventLoopGroup
    private let logger: Logger
    private let state: Mutex<State>

    init(configuration: APNsClientConfiguration, sslContext: NIOSSLContext, group: any EventLoopGroup, logger: Logger) {
        self.configuration = configuration
        self.sslContext = sslContext
        self.group = group
        self.logger = logger
        state = Mutex(State(slots: Array(repeating: Slot(), count: configuration.connections)))
    }

    /// Opens every connection; returns once each has been tried once.
    func start() async {
        await withTaskGroup(of: Void.self) { group in
            for slot in 0..<configuration.connections {
                group.addTask { await self.connect(slot: slot) }
            }
        }
    }

    /// Requests in flight across all connections.
    var inFlight: Int { state.withLock { $0.slots.reduce(0) { $0 + $1.inFlight } } }

    /// Requests waiting for a stream.
    var queued: Int { state.withLock { $0.waiters.count } }

    /// A stream if one is free right now; nil otherwise (never waits).
    func tryLease() -> Lease? {
        state.withLock { state in state.shutdown ? nil : Self.take(&state) }
    }

    /// A stream on some ready connection, waiting up to `timeout` for one to free up.
    func lease(timeout: TimeAmount) async throws -> Lease {
        enum Attempt {
            case leased(Lease)
            case wait
            case refused(APNsClientError)
        }
        let attempt = state.withLock { state -> Attempt in
            if state.shutdown { return .refused(.shutdown) }
            if let lease = Self.take(&state) { return .leased(lease) }
            if let error = Self.unreachable(state), !state.slots.contains(where: \.napping) {
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
            var woken: [CheckedContinuation<Void, Never>] = []
            defer { for sleeper in woken { sleeper.resume() } }
            let immediate = state.withLock { state -> Result<Lease, any Error>? in
                if state.shutdown { return .failure(APNsClientError.shutdown) }
                if let lease = Self.take(&state) { return .success(lease) }
                // Checked again under this lock: others may have queued since the first check.
                if state.waiters.count >= configuration.maxQueuedRequests {
                    return .failure(APNsClientError.queueFull)
                }
                if let error = Self.unreachable(state) {
                    // A connection waiting out its reconnect backoff tries again now, and this
                    // request waits for that attempt (whose failure fails it at once): after an
                    // outage the first request finds APNs back within one connection attempt,
                    // not after a backoff of up to 30 s. Kicked under the lock that queues the
                    // waiter, so the attempt cannot fail before the waiter is there to hear it.
                    let kicked = Self.kick(&state)
                    guard kicked.napping > 0 else { return .failure(APNsClientError.connectFailed(error)) }
                    woken = kicked.sleepers
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
            if state.slots[lease.slot].generation == lease.generation {
                state.slots[lease.slot].inFlight -= 1
            }
            return Self.dispatch(&state)
        }
        resume(resumed)
    }

    func shutdown() {
        let (waiters, connections) = state.withLock { state -> ([Waiter], [APNsConnection]) in
            state.shutdown = true
            let waiters = Array(state.waiters)
            state.waiters.removeAll()
            var connections: [APNsConnection] = []
            for slot in state.slots.indices {
                if case .ready(let connection) = state.slots[slot].status { connections.append(connection) }
            }
            return (waiters, connections)
        }
        for waiter in waiters {
            waiter.timeout.cancel()
            waiter.continuation.resume(throwing: APNsClientError.shutdown)
        }
        for connection in connections { connection.close() }
    }

    // MARK: - Internals

    private static func take(_ state: inout State) -> Lease? {
        var best: Int?
        var bestFree = 0
        for index in state.slots.indices {
            guard case .ready = state.slots[index].status else { continue }
            let free = state.slots[index].limit - state.slots[index].inFlight
            if free > bestFree {
                best = index
                bestFree = free
            }
        }
        guard let index = best, case .ready(let connection) = state.slots[index].status else { return nil }
        state.slots[index].inFlight += 1
        return Lease(slot: index, generation: state.slots[index].generation, connection: connection)
    }

    /// The last connection error while every connection has failed at least three times in a row.
    private static func unreachable(_ state: State) -> String? {
        guard let error = state.lastConnectError, state.slots.allSatisfy({ $0.failures >= 3 }) else { return nil }
        return error
    }

    /// Ends the reconnect backoff of every napping slot; answers how many napped and the waits to
    /// resume (outside the lock).
    private static func kick(_ state: inout State) -> (napping: Int, sleepers: [CheckedContinuation<Void, Never>]) {
        var napping = 0
        var sleepers: [CheckedContinuation<Void, Never>] = []
        for index in state.slots.indices where state.slots[index].napping {
            napping += 1
            state.slots[index].kicked = true
            if let sleeper = state.slots[index].sleeper {
                sleepers.append(sleeper)
                state.slots[index].sleeper = nil
            }
        }
        return (napping, sleepers)
    }

    /// Sleeps for `delay`, or until a kick (or cancellation).
    private func nap(slot: Int, for delay: Duration) async {
        let kickedAlready = state.withLock { state -> Bool in
            state.slots[slot].napping = true
            return state.slots[slot].kicked
        }
        if !kickedAlready {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { try? await Task.sleep(for: delay) }
                group.addTask { await self.waitForKick(slot: slot) }
                await group.next()
                group.cancelAll()
            }
        }
        let sleeper = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.slots[slot].napping = false
            state.slots[slot].kicked = false
            defer { state.slots[slot].sleeper = nil }
            return state.slots[slot].sleeper
        }
        sleeper?.resume()
    }

    private func waitForKick(slot: Int) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.slots[slot].kicked || Task.isCancelled { return true }
                    state.slots[slot].sleeper = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.slots[slot].sleeper = nil }
                return state.slots[slot].sleeper
            }
            sleeper?.resume()
        }
    }

    private static func dispatch(_ state: inout State) -> [(Waiter, Lease)] {
        var resumed: [(Waiter, Lease)] = []
        while !state.waiters.isEmpty, let lease = take(&state) {
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

    /// What became of a connection made by `connect`.
    private enum Made {
        case ready
        /// A newer connection replaced it, or the pool shut down.
        case stale
        /// It went away before it was marked ready.
        case endedAlready
    }

    private func connect(slot: Int) async {
        while !Task.isCancelled {
            let (shutdown, failures) = state.withLock { ($0.shutdown, $0.slots[slot].failures) }
            if shutdown { return }
            if failures > 0 {
                // Full jitter between attempts to reconnect: the ceiling starts at twice the base, as
                // the first failure already waited out one attempt.
                let backoff = Backoff(
                    base: configuration.reconnectBaseDelay,
                    maximum: configuration.reconnectMaximumDelay
                )
                await nap(slot: slot, for: backoff.delay(attempt: failures + 1))
            }
            do {
                let generation = beginConnection(slot: slot)
                let connection = try await open(slot: slot, generation: generation)
                let (resumed, outcome) = adopt(connection, slot: slot, generation: generation)
                switch outcome {
                case .stale:
                    connection.close()
                    return
                case .endedAlready:
                    connection.close()
                    logger.debug("APNs connection ended before it was ready", metadata: ["slot": "\(slot)"])
                    continue
                case .ready:
                    break
                }
                logger.debug("APNs connection ready", metadata: ["slot": "\(slot)"])
                resume(resumed)
                return
            } catch {
                connectionFailed(slot: slot, error)
            }
        }
    }

    /// Makes the slot's connection the one about to be made: its generation.
    private func beginConnection(slot: Int) -> Int {
        state.withLock { state -> Int in
            state.slots[slot].generation += 1
            // The slot's connection is now the one being made; a draining one it had
            // finishes on its own, its events ignored by generation.
            state.slots[slot].status = .connecting
            state.slots[slot].endedWhileConnecting = false
            return state.slots[slot].generation
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
            self?.handle(event, slot: slot, generation: generation)
        }
    }

    /// Marks a connection just made ready in its slot, unless it is stale or ended already, and
    /// wakes the other slots' reconnects; the waiters it takes, to resume once it is logged.
    private func adopt(_ connection: APNsConnection, slot: Int, generation: Int) -> ([(Waiter, Lease)], Made) {
        let (resumed, outcome, woken) = state.withLock {
            state -> ([(Waiter, Lease)], Made, [CheckedContinuation<Void, Never>]) in
            guard !state.shutdown, state.slots[slot].generation == generation else { return ([], .stale, []) }
            if state.slots[slot].endedWhileConnecting {
                // Counted as a failure: a server that ends every new connection at once
                // is then tried again after a backoff, not in a loop.
                state.slots[slot].failures += 1
                return ([], .endedAlready, [])
            }
            // Until the server's SETTINGS say otherwise, one stream (APNs starts there).
            state.slots[slot].status = .ready(connection)
            state.slots[slot].inFlight = 0
            state.slots[slot].limit = 1
            state.slots[slot].failures = 0
            state.lastConnectError = nil
            // APNs is back: the other connections reconnect now, not after their backoff.
            return (Self.dispatch(&state), .ready, Self.kick(&state).sleepers)
        }
        for sleeper in woken { sleeper.resume() }
        return (resumed, outcome)
    }

    /// Counts a failed connection; after the third in a row with no connection ready, fails the
    /// waiters.
    private func connectionFailed(slot: Int, _ error: any Error) {
        let failed = state.withLock { state -> [Waiter] in
            state.slots[slot].failures += 1
            state.lastConnectError = "\(error)"
            // Nothing can connect: waiters fail now rather than at their timeout.
            let anyReady = state.slots.contains { if case .ready = $0.status { true } else { false } }
            guard !anyReady, state.slots[slot].failures >= 3 else { return [] }
            defer { state.waiters.removeAll() }
            return Array(state.waiters)
        }
        for waiter in failed {
            waiter.timeout.cancel()
            waiter.continuation.resume(throwing: APNsClientError.connectFailed("\(error)"))
        }
        // The first failure in a row is worth a warning; the rest of an outage would
        // repeat it at every probe (the relay says once that APNs is down).
        let failures = state.withLock { $0.slots[slot].failures }
        logger.log(
            level: failures == 1 ? .warning : .debug,
            "cannot connect to APNs",
            metadata: ["slot": "\(slot)", "error": "\(error)", "failures": "\(failures)"]
        )
    }

    private func handle(_ event: APNsConnectionEvent, slot: Int, generation: Int) {
        switch event {
        case .streamLimit(let limit):
            let resumed = state.withLock { state -> [(Waiter, Lease)] in
                guard state.slots[slot].generation == generation else { return [] }
                state.slots[slot].limit = max(1, min(limit, configuration.maximumStreamsPerConnection))
                return Self.dispatch(&state)
            }
            resume(resumed)
        case .goingAway, .closed:
            let reconnect = state.withLock { state -> Bool in
                guard state.slots[slot].generation == generation, !state.shutdown else { return false }
                switch state.slots[slot].status {
                case .connecting:
                    // Still being made: `connect` sees this and makes another.
                    state.slots[slot].endedWhileConnecting = true
                    return false
                case .draining:
                    // The draining connection closed before its replacement began: one is
                    // already on its way.
                    return false
                case .ready:
                    state.slots[slot].status = event == .closed ? .connecting : .draining
                    return true
                }
            }
            if reconnect {
                // A replacement is made now; the draining connection finishes on its own.
                Task { await self.connect(slot: slot) }
            }
        }
    }
}
