/// What the janitor removes, so the store does not grow without bound.
public protocol RetentionStore: Sendable {
    /// Deletes messages whose retention ended at or before `now`, and what is older than
    /// `historyBefore`: idempotency keys first used then (the key may be used again), and finished
    /// pushes last changed then, with their payload and history. Queued and claimed pushes stay,
    /// however old. Live sessions whose lease ended at or before `now` go too: readers ignore
    /// them already, and a node that died leaves its sessions behind. Returns how many messages
    /// and pushes went.
    func deleteExpired(now: Int64, historyBefore: Int64) async throws -> (messages: Int, pushes: Int)
    /// Deletes the chats that ended before `endedBefore`, with their transcripts and disconnects,
    /// and the disconnects recorded before `endedBefore` in conversations with no chat (no event
    /// was ever added, or the chat is gone). Open chats stay, however old. Returns how many chats
    /// went.
    func deleteEndedChats(endedBefore: Int64) async throws -> Int
}
