/// Chat transcripts with their positions, and the devices that went to the background in a chat.
public protocol TranscriptStore: ChangeStore {
    /// The chat of a conversation, or `nil` if it has no event (or retention removed it).
    func chat(conversation: String) async throws -> ChatRecord?
    /// The conversation's events after `position`, in order.
    func transcript(conversation: String, after position: Int) async throws -> [TranscriptEvent]
    /// The devices disconnected from a chat, in no particular order.
    func disconnects(conversation: String) async throws -> [ChatDisconnect]
    /// Every disconnect whose first push has not been sent yet, in every chat.
    func pendingDisconnects() async throws -> [ChatDisconnect]
}
