import HeraldMacros

/// Messages held for a user who had no activated device when they came (docs/relay.md, "A
/// message to nobody"): written with the message, sealed like any message, released once into
/// pushes when a device of the user activates, or ended when the hold ends.
///
/// Holds are shared like the outbox: a release on any node (another relay node's activation)
/// takes them, and of concurrent releases of one message exactly one writes its pushes.
public protocol HeldMessageStore: ChangeStore {
    /// The user's held messages whose hold ends after `now`, oldest first.
    func heldMessages(userID: String, now: Int64) async throws -> [HeldMessage]
}

/// A message held for a user with no activated device.
@MemberwiseInit
public struct HeldMessage: Sendable, Hashable {
    public var messageID: String
    public var userID: String
    /// The app whose devices may take it; `nil`: any app's.
    public var appID: String?
    /// When it was held (its acceptance), milliseconds since the epoch.
    public var heldAt: Int64
    /// When its hold ends, milliseconds since the epoch: not released after it.
    public var heldUntil: Int64
}

/// A held message released: the pushes it becomes, one per device that takes it.
@MemberwiseInit
public struct HeldRelease: Sendable, Hashable {
    public var messageID: String
    /// Written queued (their entries' state), only if the message is still held.
    public var pushes: [OutboxEntry]
}
