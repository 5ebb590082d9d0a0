import HeraldPush
public import HeraldStore

/// Where an ingest hands the pushes its node sends itself, so no claim statement has to take them
/// back from the store (`Dispatcher` is one).
///
/// The order of calls: `reserve` before the ingest is written (its answer goes in
/// `Ingest.claim`, so the store writes those pushes already claimed); after the commit,
/// `handOff` with those pushes, or `release` when nothing was written (a repeated idempotency
/// key, a failed write). A push not reserved is written queued and claimed as before.
public protocol PushHandOff: Sendable {
    /// Which of `pushes` the node keeps (due now, through a network that answers, within the
    /// hand-off's room), claimed by whom and until when; `nil` when it keeps none.
    func reserve(_ pushes: [OutboxEntry]) -> IngestClaim?
    /// The reserved pushes, written claimed, with their tokens as the ingest read them; each
    /// entry as accepted (the hand-off counts the claim's attempt itself).
    func handOff(_ pushes: [ClaimedPush], reserved: IngestClaim)
    /// Gives back the room of a reservation whose ingest wrote nothing.
    func release(_ reserved: IngestClaim)
}

/// The hand-off's state: pushes reserved or waiting for a dispatcher loop, bounded, taken calls
/// first then the longest waiting. Events in, pushes out, no I/O.
///
/// The bound counts the pushes the loops are sending too: a node never holds more than
/// `capacity` pushes at once, claimed or handed over, so a node whose loops are stuck (a
/// provider that does not answer) leaves new pushes queued for the other nodes.
struct HandOffQueue: Sendable {
    /// Pushes reserved, waiting and being sent at most (0: the hand-off keeps none).
    let capacity: Int
    /// Reserved by ingests not yet committed.
    private(set) var reserved = 0
    /// Committed and waiting for a loop, each with the end of its lease.
    private(set) var waiting: [(push: ClaimedPush, leaseUntil: Int64)] = []
    /// Off until the dispatcher released its earlier claims, and again once it stops.
    private(set) var isOpen = false

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Room for how many more pushes while the loops send `sending`.
    func room(sending: Int) -> Int { isOpen ? max(0, capacity - sending - reserved - waiting.count) : 0 }

    /// Reserves up to `count` places while the loops send `sending` pushes; answers how many.
    mutating func reserve(_ count: Int, sending: Int) -> Int {
        let granted = min(count, room(sending: sending))
        reserved += granted
        return granted
    }

    /// Gives back `count` reserved places.
    mutating func release(_ count: Int) {
        reserved = max(0, reserved - count)
    }

    /// The committed pushes of a reservation of `count` places, claimed until `leaseUntil`;
    /// answers false (and keeps nothing) once closed: the caller puts them back in the queue.
    mutating func fulfil(_ count: Int, with pushes: [ClaimedPush], leaseUntil: Int64) -> Bool {
        release(count)
        guard isOpen else { return false }
        waiting += pushes.map { ($0, leaseUntil) }
        return true
    }

    /// Up to `limit` pushes, calls first, then the longest waiting; `stale` are those whose lease
    /// ends before `freshUntil` (the caller puts them back rather than send them late).
    mutating func take(_ limit: Int, freshUntil: Int64) -> (pushes: [ClaimedPush], stale: [ClaimedPush]) {
        guard limit > 0, !waiting.isEmpty else { return ([], []) }
        // The claim's order: calls first, then the customer's wait (`queuedSince`: the time in the
        // queue unless the app orders by customer wait). Pushes mostly arrive in it already.
        func before(_ a: OutboxEntry, _ b: OutboxEntry) -> Bool {
            (a.priority, -a.queuedSince, a.pushID) > (b.priority, -b.queuedSince, b.pushID)
        }
        if zip(waiting, waiting.dropFirst()).contains(where: { before($1.push.entry, $0.push.entry) }) {
            waiting.sort { before($0.push.entry, $1.push.entry) }
        }
        let taken = waiting.prefix(limit)
        waiting.removeFirst(taken.count)
        var pushes: [ClaimedPush] = []
        var stale: [ClaimedPush] = []
        pushes.reserveCapacity(taken.count)
        for (push, leaseUntil) in taken {
            if leaseUntil < freshUntil { stale.append(push) } else { pushes.append(push) }
        }
        return (pushes, stale)
    }

    /// Whether pushes wait for a loop.
    var isEmpty: Bool { waiting.isEmpty }

    mutating func open() { isOpen = true }

    /// Stops taking pushes; answers those still waiting (the caller puts them back).
    mutating func close() -> [ClaimedPush] {
        isOpen = false
        defer { waiting = [] }
        return waiting.map(\.push)
    }
}

extension Dispatcher: PushHandOff {
    public func reserve(_ pushes: [OutboxEntry]) -> IngestClaim? {
        let time = clock.now()
        let healthy = health.withLock { machines in Set(machines.filter(\.value.isHealthy).keys) }
        // Deferred pushes and those of a network held down go through claims, as before.
        let candidates = pushes.filter {
            $0.nextAttemptAt <= time && $0.expiresAt > time && healthy.contains($0.network)
        }
        guard !candidates.isEmpty else { return nil }
        let sending = pushesOut.load(ordering: .relaxed)
        let granted = handOffs.withLock { $0.reserve(candidates.count, sending: sending) }
        guard granted > 0 else { return nil }
        return IngestClaim(
            owner: configuration.owner,
            leaseUntil: time + configuration.lease.milliseconds,
            pushIDs: Set(candidates.prefix(granted).map(\.pushID))
        )
    }

    public func handOff(_ pushes: [ClaimedPush], reserved: IngestClaim) {
        // As the store wrote them: claimed, one attempt counted.
        let kept = pushes.filter { reserved.pushIDs.contains($0.entry.pushID) }.map { push in
            var claimed = push
            claimed.entry.state = .sending
            claimed.entry.attempts += 1
            return claimed
        }
        let taken = handOffs.withLock {
            $0.fulfil(reserved.pushIDs.count, with: kept, leaseUntil: reserved.leaseUntil)
        }
        if taken {
            signal.signal()
        } else {
            Task { await self.putBack(kept, reason: "the dispatcher stopped") }
        }
    }

    public func release(_ reserved: IngestClaim) {
        handOffs.withLock { $0.release(reserved.pushIDs.count) }
    }

    /// Puts pushes this node holds but will not send back in the queue, due at once, their
    /// attempt not counted.
    func putBack(_ pushes: [ClaimedPush], reason: String) async {
        guard !pushes.isEmpty else { return }
        let time = clock.now()
        let completions = pushes.map {
            PushCompletion(pushID: $0.entry.pushID, disposition: .requeue(at: time), reason: reason, deadToken: nil)
        }
        do {
            try await store.complete(completions, now: time)
            wake()
        } catch {
            // Their lease ends on its own: another loop or node takes them then.
            logger.error(
                "cannot put back handed-over pushes; they are sent when their lease ends",
                metadata: ["error": "\(error)", "count": .stringConvertible(pushes.count)]
            )
        }
    }
}
