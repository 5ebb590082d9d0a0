public import HeraldPush

/// Ingests and the outbox: messages and their pushes, written once per idempotency key, drained
/// by dispatchers.
///
/// `accept(_:)` is durable before it returns. `claim(limit:owner:now:leaseUntil:)` is safe with
/// several workers, on one node or many, draining the same outbox: a push is claimed by one worker
/// at a time, and a claim that is not completed by the end of its lease goes back to the queue.
public protocol OutboxStore: Sendable {
    // MARK: Ingest

    /// The receipt of the ingest written under an idempotency key (`StoreChange.accept`), or
    /// `nil` if none was.
    func receipt(idempotencyKey: String) async throws -> [UInt8]?
    /// A message written by `accept(_:)`, until retention removes it; `nil` otherwise.
    func message(id: String) async throws -> MessageRecord?

    // MARK: Outbox

    /// A push as it is now (every field as accepted, but for its state, attempts, next attempt,
    /// reason and last change), or `nil` if unknown or removed by retention.
    func push(id: String) async throws -> OutboxEntry?
    /// A push's history, oldest first: its acceptance (`queued`), each return to the queue with
    /// the reason, and its final state if it has one. Empty for an unknown push.
    func deliveryLog(pushID: String) async throws -> [DeliveryEvent]
    /// Claims up to `limit` due pushes (queued, next attempt at or before `now`, or claimed under
    /// a lease that ended before `now`) for `owner`, held through `leaseUntil`: calls before
    /// messages, then the longest waiting first (since `queuedSince`: the customer's wait where
    /// the push has one, its acceptance otherwise), returned in that order, each
    /// `sending` with one more attempt and the device's current token for its kind (VoIP pushes
    /// to the PushKit token, the others to the messaging token). Pushes past their expiration are
    /// finished `expired` (`expired before sending`), pushes whose device is gone or has no token
    /// for them `skipped` (`device_deactivated`, `no_token`, `token_dead: <reason>`), instead of
    /// returned, and count no attempt. Only pushes through one of `networks` are claimed (the
    /// dispatcher leaves a network's pushes queued while the network is unreachable); the others
    /// are neither returned nor finished, whatever their state. No networks: nothing is claimed.
    func claim(
        limit: Int,
        owner: String,
        now: Int64,
        leaseUntil: Int64,
        networks: Set<PushNetwork>
    ) async throws -> [ClaimedPush]
    /// Records what the dispatcher learned: a final state, back to the queue at a given time
    /// (logged with its reason), or back to the queue as if its claim had not happened
    /// (`requeue`: the attempt the claim counted is taken back; logged with its reason). A dead token is cleared from its device only if the device still
    /// has that token (a newer one is kept), and the device remembers why.
    func complete(_ completions: [PushCompletion], now: Int64) async throws
    /// Records several batches of outcomes, each as `complete(_:now:)` would at its own `now`,
    /// in one write where the engine can (the dispatcher gathers its loops' finished batches).
    func complete(_ batches: [CompletionBatch]) async throws
    /// Puts back every push `owner` had claimed (after a restart of that owner), due at once;
    /// returns how many.
    func releaseClaims(owner: String, now: Int64) async throws -> Int
    /// When the next queued push becomes due, if any is queued (claimed and finished pushes do
    /// not count).
    func nextDueTime() async throws -> Int64?
    /// How many pushes are in each state, and when the oldest queued push was accepted.
    func outboxCounts() async throws -> OutboxCounts
    /// How many message pushes (kind `message`) to `appID`'s devices are queued and not yet
    /// claimed: what an app's cap on queued messages is checked against.
    func queuedMessages(appID: String) async throws -> Int
    /// The pushes `query` names, newest first (acceptance time, then push id, descending), at
    /// most `query.limit` (taken within `PushQuery.limits`), with where the next page starts if
    /// more match. Pages read one after another with `next` never list a push twice, and list
    /// every push that matches from the first page to the last.
    func pushes(matching query: PushQuery) async throws -> PushPage

    // MARK: Other writers

    /// Runs until the calling task is cancelled, calling `queued` soon after another store on the
    /// same data (another relay node) queued pushes, and once whenever it may have missed some
    /// (after a lost connection), so idle dispatchers claim them at once rather than at their
    /// next poll. An engine whose data no other store writes returns at once.
    func followQueuedElsewhere(_ queued: @escaping @Sendable () -> Void) async
}

extension OutboxStore {
    /// Nothing else writes this store's data: nothing to follow.
    public func followQueuedElsewhere(_ queued: @escaping @Sendable () -> Void) async {}

    /// One batch after the other, each in a write of its own.
    public func complete(_ batches: [CompletionBatch]) async throws {
        for batch in batches { try await complete(batch.completions, now: batch.now) }
    }
}

extension OutboxStore {
    /// Claims due pushes through every network (see `claim(limit:owner:now:leaseUntil:networks:)`).
    public func claim(limit: Int, owner: String, now: Int64, leaseUntil: Int64) async throws -> [ClaimedPush] {
        try await claim(
            limit: limit,
            owner: owner,
            now: now,
            leaseUntil: leaseUntil,
            networks: Set(PushNetwork.allCases)
        )
    }
}
