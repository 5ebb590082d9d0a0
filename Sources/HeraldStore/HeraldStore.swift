/// Everything the relay keeps, behind one protocol so the storage engine can change.
///
/// Times are milliseconds since the Unix epoch, passed in by the caller (the store never reads a
/// clock), so tests and several relay nodes agree on what "now" is.
///
/// Implementations must make `accept(_:)` durable before it returns, and `claim(_:)` safe with
/// several workers, on one node or many, draining the same outbox: a push is claimed by one
/// worker at a time, and a claim that is not completed before its lease ends goes back to the
/// queue.
public protocol HeraldStore: Sendable {
    // MARK: Apps

    /// Adds or replaces an app.
    func saveApp(_ app: AppRecord) async throws
    func app(id: String) async throws -> AppRecord?
    func apps() async throws -> [AppRecord]

    // MARK: Devices

    /// Adds or replaces a device. Its tokens are taken away from any other device that had them.
    func saveDevice(_ device: DeviceRecord) async throws
    func device(id: String) async throws -> DeviceRecord?
    /// The user's devices with their presence, in one read: what every ingest needs.
    func recipients(userID: String) async throws -> [Recipient]
    /// Sets a device's tokens (`nil` leaves one as it is; an empty string removes it), taking them
    /// away from any other device. Returns the device after the change, or `nil` if unknown.
    func updateTokens(deviceID: String, messaging: String?, voip: String?, now: Int64) async throws -> DeviceRecord?
    /// Removes a device with its tokens, keys, credential and presence. Returns whether it existed.
    func deleteDevice(id: String) async throws -> Bool
    /// How many devices are stored.
    func deviceCount() async throws -> Int

    // MARK: Presence

    func savePresence(_ presence: PresenceRecord) async throws

    // MARK: Ingest and messages

    /// Writes a message and its pushes, once per idempotency key; durable when it returns.
    func accept(_ ingest: Ingest) async throws -> IngestOutcome
    func message(id: String) async throws -> MessageRecord?
    /// Deletes messages past their retention, and what is older than `historyBefore`: idempotency
    /// keys first used then, and finished pushes (with their history) last changed then. Returns
    /// how many messages and pushes went.
    func deleteExpired(now: Int64, historyBefore: Int64) async throws -> (messages: Int, pushes: Int)

    // MARK: Outbox

    func push(id: String) async throws -> OutboxEntry?
    /// A push's history, oldest first.
    func deliveryLog(pushID: String) async throws -> [DeliveryEvent]
    /// Claims up to `limit` due pushes for `owner` until `leaseUntil`: calls before messages,
    /// then the longest waiting first. Pushes past their expiration, and pushes whose device has
    /// no token for their kind any more, are finished (expired / skipped) instead of returned.
    func claim(limit: Int, owner: String, now: Int64, leaseUntil: Int64) async throws -> [ClaimedPush]
    /// Records what the dispatcher learned; a dead token is cleared from its device if the device
    /// still has it, and the device remembers why.
    func complete(_ completions: [PushCompletion], now: Int64) async throws
    /// Puts back every push `owner` had claimed (after a restart of that owner); returns how many.
    func releaseClaims(owner: String, now: Int64) async throws -> Int
    /// When the next queued push becomes due, if any is queued.
    func nextDueTime() async throws -> Int64?
    func outboxCounts() async throws -> OutboxCounts

    // MARK: Chat transcripts

    /// Appends an event at the conversation's next position; returns the position.
    func appendTranscript(_ event: TranscriptEvent) async throws -> Int
    /// The conversation's events after `position`, in order.
    func transcript(conversation: String, after position: Int) async throws -> [TranscriptEvent]
    /// Records (or replaces) a device's disconnect from a chat.
    func saveDisconnect(_ disconnect: ChatDisconnect) async throws
    /// Notes that a disconnected device got its first push (only if it is still disconnected).
    func markDisconnectPushed(deviceID: String, conversation: String) async throws
    /// Removes a device's disconnect and returns it, if it had one.
    func removeDisconnect(deviceID: String, conversation: String) async throws -> ChatDisconnect?
    /// The devices disconnected from a chat.
    func disconnects(conversation: String) async throws -> [ChatDisconnect]
    /// Every disconnect whose first push has not been sent yet, in every chat.
    func pendingDisconnects() async throws -> [ChatDisconnect]
}
