/// Senders an older version stored in the clear (a message's sender, a chat event's author), for
/// the relay to seal once at start: the store cannot, it has no master key.
///
/// An engine that never stored a clear sender (any engine new since senders are sealed) answers
/// no sender and has nothing to seal.
public protocol SealingStore: Sendable {
    /// Up to `limit` senders still in the clear, in no particular order; empty once every one is
    /// sealed.
    func clearSenders(limit: Int) async throws -> [ClearSender]
}
