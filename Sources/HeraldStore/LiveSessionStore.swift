import HeraldMacros

/// One device's open live channel, as every relay node sees it: which node holds the WebSocket,
/// the conversation its app is on screen in, and until when the node vouches for it.
@MemberwiseInit
public struct LiveSessionRecord: Sendable, Hashable {
    public var deviceID: String
    /// The relay node holding the channel (its node id).
    public var nodeID: String
    /// The channel, unique across nodes and restarts: a newer channel of the device replaces it.
    public var sessionID: String
    /// The conversation the app is active in, `nil` while it is not on screen in one.
    public var conversation: String?
    /// The session's lease: past it, the session is ignored (its node stopped renewing it).
    public var expiresAt: Int64
}

/// A message handed to the node holding a device's live channel: pending until the device
/// acknowledges it (settled) or its deadline passes (taken by any node's sweep, which pushes it).
/// Holds ids only: the message's content stays sealed in the message store.
@MemberwiseInit
public struct LiveHandover: Sendable, Hashable {
    public var messageID: String
    public var deviceID: String
    /// The node that delivers it on the device's channel.
    public var nodeID: String
    /// When it is pushed instead if the device has not acknowledged it.
    public var deadline: Int64
}

/// A chat event shown on the live channel (`chat_event`), announced by the node that recorded it
/// to a node holding channels of the chat's customer. Names the event only: that node reads it
/// from the transcript, where its author and text stay sealed.
@MemberwiseInit
public struct ChatEventNotice: Sendable, Hashable, Codable {
    public var conversation: String
    /// The event's position in the chat's transcript.
    public var position: Int
}

/// The live sessions of every relay node sharing the data, and the messages handed between them.
///
/// A handover is written with its message by `OutboxStore.accept(_:)` (`Ingest.handovers`), so a
/// message is either stored with its pending live delivery or not at all. From then on exactly one
/// of three things removes it, each answering it once: the device's acknowledgement
/// (`settleLiveHandover`), the delivering node giving up on it (`settleLiveHandover`, then it
/// pushes), or the sweep past its deadline (`takeOverdueLiveHandovers`, then it pushes).
public protocol LiveSessionStore: ChangeStore {
    /// The sessions of these devices whose lease has not ended at `now`, in no particular order.
    func liveSessions(deviceIDs: [String], now: Int64) async throws -> [LiveSessionRecord]
    /// Runs until the calling task is cancelled, calling `arrived` soon after a store on the same
    /// data (another relay node) handed `nodeID` a message, and once whenever it may have missed
    /// some (at start, after a lost connection). An engine whose data no other store writes
    /// returns at once.
    func followLiveHandovers(nodeID: String, _ arrived: @escaping @Sendable () -> Void) async
    /// Tells each of `nodeIDs` that a chat event it may show on its channels was recorded, soon
    /// and at most once, with no record kept: a node that is not listening then misses it (the
    /// frame is best effort, the app resyncs from the transcript). Never throws: a failure is
    /// logged and the event stays in the transcript.
    func announceChatEvent(_ notice: ChatEventNotice, to nodeIDs: Set<String>) async
    /// Runs until the calling task is cancelled, calling `heard` with each chat event another
    /// store on the same data announced to `nodeID`, in the order they were announced. An engine
    /// whose data no other store writes returns at once.
    func followChatEvents(nodeID: String, _ heard: @escaping @Sendable (ChatEventNotice) -> Void) async
}

extension LiveSessionStore {
    /// Nothing else writes this store's data: nothing to follow.
    public func followLiveHandovers(nodeID: String, _ arrived: @escaping @Sendable () -> Void) async {}
    /// One node holds every channel: nobody else to tell.
    public func announceChatEvent(_ notice: ChatEventNotice, to nodeIDs: Set<String>) async {}
    /// Nothing else writes this store's data: nothing to follow.
    public func followChatEvents(nodeID: String, _ heard: @escaping @Sendable (ChatEventNotice) -> Void) async {}
}
