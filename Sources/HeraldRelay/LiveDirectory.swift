public import HeraldStore
public import Logging

/// How the live channels behave, on one node or across several.
public struct LiveConfiguration: Sendable {
    /// How long a message sent over a live channel waits for the device's acknowledgement before
    /// it is pushed instead (docs/relay.md).
    public var ackTimeout: Duration = .seconds(10)
    /// The relay node's id when the store is shared by several nodes (PostgreSQL): its channels
    /// are then published in the store under this id, and a message for a device whose channel
    /// another node holds is handed to that node. `nil` (the default, SQLite): the channels are
    /// this process's only, and tracked in its memory.
    public var nodeID: String?
    /// How long a node's published channels count without its heartbeat: a node that dies stops
    /// renewing them, and after this the other nodes push to those devices again. Renewed every
    /// third of it.
    public var sessionLease: Duration = .seconds(30)
    /// How often a node looks for handed-over messages it missed a wake-up for, and for messages
    /// past their acknowledgement deadline that no node pushed (their node died): the latest such
    /// a message is pushed is `ackTimeout` plus this.
    public var sweepInterval: Duration = .seconds(1)

    public init() {}
}

/// Where the relay's live channels are known: which node holds a device's channel and what its
/// app is on screen in, and the record of a live delivery that is not acknowledged yet.
///
/// `ProcessLiveDirectory` is one process's (the channels themselves are the directory);
/// `SharedLiveDirectory` keeps them in a store shared by the relay's nodes.
public protocol LiveSessionDirectory: Sendable {
    /// This node's id among the nodes; `nil` when no other node shares the directory (a live
    /// delivery is then tracked in memory only, and never handed over).
    var nodeID: String? { get }
    /// A channel this node holds was opened or its app's conversation changed.
    func publish(deviceID: String, sessionID: String, conversation: String?, now: Int64) async
    /// A channel this node held closed.
    func withdraw(deviceID: String, sessionID: String) async
    /// The heartbeat: the channels this node holds now.
    func renew(sessionIDs: Set<String>, now: Int64) async throws
    /// The node holding each of these recipients' channels where its app is on screen in
    /// `conversation`, for the channels held by other nodes (device id → node id). The channels
    /// were read with the recipients (`Recipient.liveSession`): the ingest makes one read.
    func heldElsewhere(_ recipients: [Recipient], conversation: String, now: Int64) -> [String: String]
    /// The other nodes holding a channel of one of these recipients, whatever their apps are on
    /// screen in (read with the recipients, as for `heldElsewhere`).
    func nodesElsewhere(_ recipients: [Recipient], now: Int64) -> Set<String>
    /// Tells those nodes a chat event they may show on their channels was recorded (best effort).
    func announceChatEvent(_ notice: ChatEventNotice, to nodeIDs: Set<String>) async
    /// Closes the record of a live delivery: true if it was still open (the caller, on a timeout
    /// or a closed channel, pushes the message; on an acknowledgement, nothing).
    func settle(messageID: String, deviceID: String) async -> Bool
}

/// One process's live channels: nothing is known elsewhere, and the channels' own memory tracks
/// each delivery (today's single-node relay, on SQLite).
public struct ProcessLiveDirectory: LiveSessionDirectory {
    public init() {}

    public var nodeID: String? { nil }
    public func publish(deviceID: String, sessionID: String, conversation: String?, now: Int64) async {}
    public func withdraw(deviceID: String, sessionID: String) async {}
    public func renew(sessionIDs: Set<String>, now: Int64) async throws {}
    public func heldElsewhere(_ recipients: [Recipient], conversation: String, now: Int64) -> [String: String] { [:] }
    /// No other node.
    public func nodesElsewhere(_ recipients: [Recipient], now: Int64) -> Set<String> { [] }
    /// No other node to tell.
    public func announceChatEvent(_ notice: ChatEventNotice, to nodeIDs: Set<String>) async {}
    /// The channel's pending list was the only record, and its caller just took the message off.
    public func settle(messageID: String, deviceID: String) async -> Bool { true }
}

/// The live channels of every node sharing a store: each node publishes its channels under its
/// node id with a lease it renews, and a live delivery is a durable handover in the store
/// (written with its message), settled by the acknowledgement or pushed by whoever removes it
/// first otherwise.
public struct SharedLiveDirectory: LiveSessionDirectory {
    let store: any LiveSessionStore & ChangeStore
    let node: String
    let lease: Duration
    let logger: Logger

    public init(store: any LiveSessionStore & ChangeStore, nodeID: String, lease: Duration, logger: Logger) {
        self.store = store
        self.node = nodeID
        self.lease = lease
        self.logger = logger
    }

    public var nodeID: String? { node }

    public func publish(deviceID: String, sessionID: String, conversation: String?, now: Int64) async {
        do {
            let session = LiveSessionRecord(
                deviceID: deviceID,
                nodeID: node,
                sessionID: sessionID,
                conversation: conversation,
                expiresAt: now + lease.milliseconds
            )
            try await store.apply(.saveLiveSession(session))
        } catch {
            // The channel still works here; other nodes push to the device meanwhile.
            logger.warning("cannot publish a live channel", metadata: ["error": "\(error)"])
        }
    }

    public func withdraw(deviceID: String, sessionID: String) async {
        do {
            try await store.apply(.removeLiveSession(deviceID: deviceID, sessionID: sessionID))
        } catch {
            // Its lease ends it; until then other nodes hand messages here, which pushes them.
            logger.warning("cannot withdraw a live channel", metadata: ["error": "\(error)"])
        }
    }

    public func renew(sessionIDs: Set<String>, now: Int64) async throws {
        guard !sessionIDs.isEmpty else { return }
        try await store.apply(.renewLiveSessions(nodeID: node, keeping: sessionIDs, until: now + lease.milliseconds))
    }

    /// Another node's channel, on screen in the conversation, its lease still running.
    public func heldElsewhere(_ recipients: [Recipient], conversation: String, now: Int64) -> [String: String] {
        var nodes: [String: String] = [:]
        for session in recipients.compactMap(\.liveSession)
        where session.nodeID != node && session.conversation == conversation && session.expiresAt > now {
            nodes[session.deviceID] = session.nodeID
        }
        return nodes
    }

    /// Another node's channel, its lease still running.
    public func nodesElsewhere(_ recipients: [Recipient], now: Int64) -> Set<String> {
        Set(recipients.compactMap(\.liveSession).filter { $0.nodeID != node && $0.expiresAt > now }.map(\.nodeID))
    }

    /// Through the store (`LiveSessionStore.announceChatEvent`).
    public func announceChatEvent(_ notice: ChatEventNotice, to nodeIDs: Set<String>) async {
        await store.announceChatEvent(notice, to: nodeIDs)
    }

    public func settle(messageID: String, deviceID: String) async -> Bool {
        do {
            return try await store.apply(.settleLiveHandover(messageID: messageID, deviceID: deviceID)) == .applied
        } catch {
            // Left pending, the sweep pushes it past its deadline: a push too many rather than
            // a message lost.
            logger.warning("cannot settle a live delivery", metadata: ["error": "\(error)"])
            return false
        }
    }
}
