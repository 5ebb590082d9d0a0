import HeraldPush

/// The slots of the APNs connection pool, as a state machine: events in, actions out, no I/O.
/// `APNsConnectionPool` opens connections, sleeps out backoffs, logs and wakes requests as it
/// answers; every rule about when a slot connects, waits, gives up on a connection or fails the
/// requests waiting for one lives here:
///
/// - Each slot runs one connect loop at a time (in the pool's task group): it opens a
///   connection; one that fails counts a failure and the loop tries again after a backoff (full
///   jitter, the ceiling doubling from twice `reconnectBaseDelay` up to
///   `reconnectMaximumDelay`: the first failure already waited out one attempt).
/// - A connection made is the slot's only if it is still the slot's latest attempt (each
///   attempt a new generation) and the pool is not shut down; otherwise it is closed. One whose
///   server already ended it (GOAWAY, closed) before it was marked ready counts as a failure,
///   so a server that ends every new connection at once is tried again after a backoff, not in a
///   loop.
/// - A connection ready resets the slot's failures, takes one stream until the server's
///   SETTINGS say more (at most `maximumStreamsPerConnection`), hands free streams to the
///   requests waiting, and ends the other slots' backoffs: APNs is back.
/// - GOAWAY on a ready connection drains it (its streams finish, nothing new is sent); GOAWAY or
///   a close starts a replacement at once. Events of an older generation are ignored.
/// - After a slot's third failure in a row with no connection ready anywhere, the requests
///   waiting fail at once rather than at their timeout; and while every slot has failed three
///   times, a new request is refused at once, unless a slot is waiting out its backoff: then
///   that backoff ends (a kick) and the request waits for the attempt, so after an outage the
///   first request finds APNs within one connection attempt.
/// - Shutdown closes the ready connections and fails the requests waiting; connect loops stop
///   (those waiting out a backoff at once).
struct APNsPoolStateMachine<Connection: Sendable>: Sendable {
    /// Where a slot's connection is.
    enum Status: Sendable {
        /// No connection; one is being made (or will be, after a backoff).
        case connecting
        case ready(Connection)
        /// GOAWAY received: in-flight streams finish, nothing new is sent.
        case draining
    }

    struct Slot: Sendable {
        var status: Status = .connecting
        /// Bumped for every new connection, so events and releases for an old one are ignored.
        var generation = 0
        var inFlight = 0
        var limit = 1
        /// Failed attempts in a row.
        var failures = 0
        /// Waiting out the reconnect backoff.
        var backingOff = false
        /// The backoff was ended early (a request waits): the wait returns at once.
        var kicked = false
        /// The connection being made went away before it was ready: its events can come before
        /// the connect returns, and a connection marked ready after them would refuse every
        /// request leased to it.
        var endedWhileConnecting = false
    }

    /// A stream on a slot's connection, held by one request.
    struct Lease: Sendable {
        let slot: Int
        let generation: Int
        let connection: Connection
    }

    /// What happened.
    enum Event: Sendable {
        /// The slot's connect loop is at its start (or goes round again).
        case connect(slot: Int)
        /// The slot's backoff wait ended (its time, a wake, or cancellation).
        case backedOff(slot: Int)
        /// The slot's attempt of `generation` made a connection.
        case opened(slot: Int, generation: Int, Connection)
        /// The slot's attempt failed.
        case openFailed(slot: Int, error: String)
        /// The connection of the slot's `generation` says so.
        case connection(slot: Int, generation: Int, APNsConnectionEvent)
        /// A request is about to wait while APNs is unreachable: end every backoff now.
        case kick
        case shutdown
    }

    /// What the pool must do, in order.
    enum Action: Sendable {
        /// Open a connection for the slot's attempt of `generation`; report `.opened` or
        /// `.openFailed`.
        case open(slot: Int, generation: Int)
        /// Wait `delay` before the slot's next attempt, unless woken first; report `.backedOff`.
        case backOff(slot: Int, delay: Duration)
        /// The slot's connect loop ends.
        case stopConnecting(slot: Int)
        /// Start a connect loop for the slot (its connection went away).
        case reconnect(slot: Int)
        /// End the slot's backoff wait now.
        case wake(slot: Int)
        case close(Connection)
        /// Hand free streams to the requests waiting, longest waiting first.
        case dispatchWaiters
        /// Fail every request waiting.
        case failWaiters(APNsClientError)
        /// The slot's connection is ready (log).
        case becameReady(slot: Int)
        /// The slot's connection ended before it was ready (log).
        case endedBeforeReady(slot: Int)
        /// The slot's attempt failed, the `failures`th in a row (log: a warning for the first,
        /// the rest of an outage would repeat it).
        case connectFailed(slot: Int, failures: Int, error: String)
    }

    private(set) var slots: [Slot]
    private(set) var isShutdown = false
    /// The last connection error; nil once a connection is ready.
    private(set) var lastConnectError: String?
    let maximumStreamsPerConnection: Int
    let backoff: Backoff
    /// Draws a backoff's delay for an attempt (tests draw the ceiling).
    let draw: @Sendable (Backoff, Int) -> Duration

    init(
        connections: Int,
        maximumStreamsPerConnection: Int,
        backoff: Backoff,
        draw: @escaping @Sendable (Backoff, Int) -> Duration = { $0.delay(attempt: $1) }
    ) {
        slots = Array(repeating: Slot(), count: max(1, connections))
        self.maximumStreamsPerConnection = maximumStreamsPerConnection
        self.backoff = backoff
        self.draw = draw
    }

    /// Takes one event in; answers what to do about it, in order.
    mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .connect(let slot):
            return connect(slot)
        case .backedOff(let slot):
            slots[slot].backingOff = false
            slots[slot].kicked = false
            if isShutdown { return [.stopConnecting(slot: slot)] }
            return begin(slot)
        case .opened(let slot, let generation, let connection):
            return opened(slot, generation: generation, connection)
        case .openFailed(let slot, let error):
            return failed(slot, error: error)
        case .connection(let slot, let generation, let event):
            return connectionEvent(event, slot: slot, generation: generation)
        case .kick:
            return kick()
        case .shutdown:
            isShutdown = true
            var actions: [Action] = [.failWaiters(.shutdown)]
            for slot in slots {
                if case .ready(let connection) = slot.status { actions.append(.close(connection)) }
            }
            // Backoffs end now: their loops stop rather than wait to be cancelled.
            return actions + kick()
        }
    }

    // MARK: - Leases (no actions: every request takes and gives back a stream)

    /// A stream on the ready connection with the most free, if any.
    mutating func take() -> Lease? {
        guard !isShutdown else { return nil }
        var best: Int?
        var bestFree = 0
        for index in slots.indices {
            guard case .ready = slots[index].status else { continue }
            let free = slots[index].limit - slots[index].inFlight
            if free > bestFree {
                best = index
                bestFree = free
            }
        }
        guard let index = best, case .ready(let connection) = slots[index].status else { return nil }
        slots[index].inFlight += 1
        return Lease(slot: index, generation: slots[index].generation, connection: connection)
    }

    /// Gives a stream back (one of an older connection is no longer counted).
    mutating func release(_ lease: Lease) {
        if slots[lease.slot].generation == lease.generation { slots[lease.slot].inFlight -= 1 }
    }

    /// Requests in flight across all connections.
    var inFlight: Int { slots.reduce(0) { $0 + $1.inFlight } }

    /// The last connection error while every slot has failed at least three times in a row.
    var unreachable: String? {
        guard let error = lastConnectError, slots.allSatisfy({ $0.failures >= 3 }) else { return nil }
        return error
    }

    /// Whether a slot waits out its backoff.
    var isBackingOff: Bool { slots.contains(where: \.backingOff) }

    /// Whether the slot's backoff was ended early (its wait returns at once).
    func isKicked(slot: Int) -> Bool { slots[slot].kicked }

    // MARK: - Internals

    private mutating func connect(_ slot: Int) -> [Action] {
        if isShutdown { return [.stopConnecting(slot: slot)] }
        guard slots[slot].failures > 0 else { return begin(slot) }
        slots[slot].backingOff = true
        return [.backOff(slot: slot, delay: draw(backoff, slots[slot].failures + 1))]
    }

    /// Makes the slot's connection the one about to be made: a new generation.
    private mutating func begin(_ slot: Int) -> [Action] {
        slots[slot].generation += 1
        // A draining connection the slot had finishes on its own, its events ignored by
        // generation.
        slots[slot].status = .connecting
        slots[slot].endedWhileConnecting = false
        return [.open(slot: slot, generation: slots[slot].generation)]
    }

    private mutating func opened(_ slot: Int, generation: Int, _ connection: Connection) -> [Action] {
        guard !isShutdown, slots[slot].generation == generation else {
            return [.close(connection), .stopConnecting(slot: slot)]
        }
        if slots[slot].endedWhileConnecting {
            slots[slot].failures += 1
            return [.close(connection), .endedBeforeReady(slot: slot)] + connect(slot)
        }
        slots[slot].status = .ready(connection)
        slots[slot].inFlight = 0
        // Until the server's SETTINGS say otherwise, one stream (APNs starts there).
        slots[slot].limit = 1
        slots[slot].failures = 0
        lastConnectError = nil
        // APNs is back: the other connections reconnect now, not after their backoff.
        return [.dispatchWaiters] + kick() + [.becameReady(slot: slot), .stopConnecting(slot: slot)]
    }

    private mutating func failed(_ slot: Int, error: String) -> [Action] {
        slots[slot].failures += 1
        lastConnectError = error
        var actions: [Action] = []
        // Nothing can connect: the requests waiting fail now rather than at their timeout.
        let anyReady = slots.contains { if case .ready = $0.status { true } else { false } }
        if !anyReady, slots[slot].failures >= 3 { actions.append(.failWaiters(.connectFailed(error))) }
        actions.append(.connectFailed(slot: slot, failures: slots[slot].failures, error: error))
        return actions + connect(slot)
    }

    private mutating func connectionEvent(_ event: APNsConnectionEvent, slot: Int, generation: Int) -> [Action] {
        guard slots[slot].generation == generation else { return [] }
        switch event {
        case .streamLimit(let limit):
            slots[slot].limit = max(1, min(limit, maximumStreamsPerConnection))
            return [.dispatchWaiters]
        case .goingAway, .closed:
            guard !isShutdown else { return [] }
            switch slots[slot].status {
            case .connecting:
                // Still being made: the connect loop sees this and makes another.
                slots[slot].endedWhileConnecting = true
                return []
            case .draining:
                // The draining connection closed before its replacement began: one is already
                // on its way.
                return []
            case .ready:
                // A replacement is made now; a draining connection finishes on its own.
                slots[slot].status = event == .closed ? .connecting : .draining
                return [.reconnect(slot: slot)]
            }
        }
    }

    /// Ends the backoff of every slot waiting one.
    private mutating func kick() -> [Action] {
        var actions: [Action] = []
        for index in slots.indices where slots[index].backingOff {
            slots[index].kicked = true
            actions.append(.wake(slot: index))
        }
        return actions
    }
}

extension APNsPoolStateMachine.Action: Equatable where Connection: Equatable {}
