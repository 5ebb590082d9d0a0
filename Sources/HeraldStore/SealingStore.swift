/// Senders an older version stored in the clear (a message's sender, a chat event's author), for
/// the relay to seal once at start: the store cannot, it has no master key.
///
/// An engine that never stored a clear sender (any engine new since senders are sealed) answers
/// no sender and has nothing to seal.
public protocol SealingStore: Sendable {
    /// Up to `limit` senders still in the clear, in no particular order; empty once every one is
    /// sealed.
    func clearSenders(limit: Int) async throws -> [ClearSender]
    /// Gives each record its sealed sender in place of its clear one, and forgets the clear one
    /// (it is not left in the storage's free space or logs when the engine can help it). A record
    /// that is unknown, or whose sender is already sealed, is left as it is.
    func sealSenders(_ sealed: [ClearSender.Record: [UInt8]]) async throws
}
