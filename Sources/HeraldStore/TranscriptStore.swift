/// Chat transcripts with their positions, and the devices that went to the background in a chat.
public protocol TranscriptStore: Sendable {
    /// Appends an event at the conversation's next position (1, 2, 3 … per conversation, none
    /// given twice, even to concurrent appends); returns the position. The first event starts the
    /// chat (with the event's user and time), every event moves its last event time. An event for
    /// an ended chat is refused with `StoreError.conflict` and nothing is written.
    func appendTranscript(_ event: TranscriptEvent) async throws -> Int
    /// The chat of a conversation, or `nil` if it has no event (or retention removed it).
    func chat(conversation: String) async throws -> ChatRecord?
    /// Ends every open chat whose last event is at or before `now - idle`, each at its last event
    /// plus `idle` (when it became idle, whenever this runs). Returns how many ended.
    func endIdleChats(now: Int64, idle: Int64) async throws -> Int
    /// The conversation's events after `position`, in order.
    func transcript(conversation: String, after position: Int) async throws -> [TranscriptEvent]
    /// Removes a device's disconnect and returns it, if it had one; then writes the webhook
    /// events `events` makes of it, in the same transaction.
    func removeDisconnect(
        deviceID: String,
        conversation: String,
        events: @escaping @Sendable (ChatDisconnect) -> [WebhookEvent]
    ) async throws -> ChatDisconnect?
    /// The devices disconnected from a chat, in no particular order.
    func disconnects(conversation: String) async throws -> [ChatDisconnect]
    /// Every disconnect whose first push has not been sent yet, in every chat.
    func pendingDisconnects() async throws -> [ChatDisconnect]
}

extension TranscriptStore {
    /// Removes a device's disconnect and returns it, if it had one, reported to no webhook.
    public func removeDisconnect(deviceID: String, conversation: String) async throws -> ChatDisconnect? {
        try await removeDisconnect(deviceID: deviceID, conversation: conversation) { _ in [] }
    }
}
