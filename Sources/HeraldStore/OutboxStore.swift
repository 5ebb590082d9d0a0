public import HeraldPush

/// Ingests and the outbox: messages and their pushes, written once per idempotency key, drained
/// by dispatchers.
///
/// `accept(_:)` is durable before it returns. `claim(limit:owner:now:leaseUntil:)` is safe with
/// several workers, on one node or many, draining the same outbox: a push is claimed by one worker
/// at a time, and a claim that is not completed by the end of its lease goes back to the queue.
public protocol OutboxStore: ChangeStore {
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
    /// The receipts the phone sent for a push, in the order of their stages (empty for an unknown
    /// push).
    func receipts(pushID: String) async throws -> [PushReceipt]
    /// When the next queued push becomes due, if any is queued (claimed and finished pushes do
    /// not count).
    func nextDueTime() async throws -> Int64?
    /// How many pushes are in each state, and when the oldest queued push was accepted.
    func outboxCounts() async throws -> OutboxCounts
    /// How many pushes are queued and sending (`byState` holds those two only), and when the
    /// oldest queued push was accepted: the queue alone, read through its partial indexes, so
    /// its cost follows the queue's length, not the outbox's (`outboxCounts` reads every row).
    func queueCounts() async throws -> OutboxCounts
    /// How many message pushes (kind `message`) to `appID`'s devices are queued and not yet
    /// claimed: what an app's cap on queued messages is checked against.
    func queuedMessages(appID: String) async throws -> Int
    /// The pushes `query` names, newest first (acceptance time, then push id, descending), at
    /// most `query.limit` (taken within `PushQuery.limits`), with where the next page starts if
    /// more match. Pages read one after another with `next` never list a push twice, and list
    /// every push that matches from the first page to the last.
    func pushes(matching query: PushQuery) async throws -> PushPage
    /// The pushes named by `ids` (at most `PushSummary.maximumLookup`; more throws `invalid`), as
    /// a listing shows them, in no particular order; an id of no push (unknown or removed by
    /// retention) has none, and an id named twice one.
    func pushSummaries(ids: [String]) async throws -> [PushSummary]
    /// The pushes that finished (reached a final state) at or after `since`: how many each
    /// minute by network, state and reason, and the latest `sampleLimit` of them (taken within
    /// 0…`PushActivity.maximumSamples`) with their times. A push counts at its last change: one
    /// retried and then delivered counts once, as delivered.
    func pushActivity(since: Int64, sampleLimit: Int) async throws -> PushActivity

    // MARK: Deadlines

    /// Of `deviceIDs`, those sent a push of `subjectID` (a message's id) accepted at or after
    /// `since`: who a message reached already, when a deadline pushes it to the others.
    func devicesSent(subjectID: String, since: Int64, among deviceIDs: [String]) async throws -> Set<String>
    /// When the next push deadline is due, if one waits unclaimed (or under a lapsed claim).
    func nextDeadlineDueTime() async throws -> Int64?
    /// How often a device's VoIP pushes went unreported to CallKit; `nil`: never.
    func unreportedCalls(deviceID: String) async throws -> UnreportedCalls?

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
}
