import Foundation
public import HeraldStore
import Logging
import PostgresNIO

/// Live sessions and handovers across nodes. A handover wakes its node with a NOTIFY on a
/// channel of that node's own, sent after the ingest that wrote it committed; the payload is
/// empty (the node reads its handovers from the table), so no id or content travels that way.
extension PostgresStore {
    /// `StoreChange.saveLiveSession`, inside the caller's transaction.
    static func saveLiveSession(
        _ session: LiveSessionRecord,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        try await connection.run(
            """
            INSERT INTO live_sessions (device_id, node_id, session_id, conversation, expires_at)
            VALUES (\(session.deviceID), \(session.nodeID), \(session.sessionID), \(session.conversation),
                \(session.expiresAt))
            ON CONFLICT (device_id) DO UPDATE SET node_id = excluded.node_id, session_id = excluded.session_id,
                conversation = excluded.conversation, expires_at = excluded.expires_at
            """,
            logger: logger
        )
    }

    /// `StoreChange.removeLiveSession`, inside the caller's transaction.
    static func removeLiveSession(
        deviceID: String,
        sessionID: String,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        let removed = try await connection.run(
            """
            DELETE FROM live_sessions WHERE device_id = \(deviceID) AND session_id = \(sessionID)
            RETURNING device_id
            """,
            logger: logger
        )
        return removed.isEmpty ? .stale : .applied
    }

    /// `StoreChange.renewLiveSessions`, inside the caller's transaction.
    static func renewLiveSessions(
        _ nodeID: String,
        _ sessionIDs: Set<String>,
        _ until: Int64,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        guard !sessionIDs.isEmpty else { return }
        try await connection.run(
            """
            UPDATE live_sessions SET expires_at = \(until)
            WHERE node_id = \(nodeID) AND session_id = ANY(\(Array(sessionIDs)))
            """,
            logger: logger
        )
    }

    /// A call's end looks up its devices' channels with this; an ingest reads them with the
    /// recipients (`Recipient.liveSession`), so this read is not on the push path.
    public func liveSessions(deviceIDs: [String], now: Int64) async throws -> [LiveSessionRecord] {
        guard !deviceIDs.isEmpty else { return [] }
        let rows = try await rows(
            "read live sessions",
            """
            SELECT device_id, node_id, session_id, conversation, expires_at FROM live_sessions
            WHERE device_id = ANY(\(Array(Set(deviceIDs)))) AND expires_at > \(now)
            """
        )
        do {
            return try rows.map { row in
                let (device, node, session, conversation, expires) = try row.decode(
                    (String, String, String, String?, Int64).self
                )
                return LiveSessionRecord(
                    deviceID: device,
                    nodeID: node,
                    sessionID: session,
                    conversation: conversation,
                    expiresAt: expires
                )
            }
        } catch {
            throw StoreError.corrupt.with(detail: "read live sessions: \(error)")
        }
    }

    package func takeLiveHandovers(for nodeID: String) async throws -> [LiveHandover] {
        let rows = try await rows(
            "take live handovers",
            """
            UPDATE live_handovers SET taken = true
            WHERE node_id = \(nodeID) AND NOT taken
            RETURNING message_id, device_id, node_id, deadline
            """
        )
        return try Self.handovers(rows, "take live handovers").sorted {
            ($0.deadline, $0.messageID) < ($1.deadline, $1.messageID)
        }
    }

    /// `StoreChange.settleLiveHandover`, inside the caller's transaction.
    static func settleLiveHandover(
        _ messageID: String,
        _ deviceID: String,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        let settled = try await connection.run(
            "DELETE FROM live_handovers WHERE message_id = \(messageID) AND device_id = \(deviceID) RETURNING 1",
            logger: logger
        )
        return settled.isEmpty ? .stale : .applied
    }

    package func takeOverdueLiveHandovers(at now: Int64, limit: Int) async throws -> [LiveHandover] {
        // SKIP LOCKED: two sweeps at once split the overdue handovers rather than wait for each
        // other; each row is deleted, so returned, once.
        let rows = try await rows(
            "take overdue live handovers",
            """
            DELETE FROM live_handovers WHERE (message_id, device_id) IN (
                SELECT message_id, device_id FROM live_handovers WHERE deadline <= \(now)
                ORDER BY deadline LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            RETURNING message_id, device_id, node_id, deadline
            """
        )
        return try Self.handovers(rows, "take overdue live handovers").sorted {
            ($0.deadline, $0.messageID) < ($1.deadline, $1.messageID)
        }
    }

    private static func handovers(_ rows: [PostgresRow], _ what: String) throws -> [LiveHandover] {
        do {
            return try rows.map { row in
                let (message, device, node, deadline) = try row.decode((String, String, String, Int64).self)
                return LiveHandover(messageID: message, deviceID: device, nodeID: node, deadline: deadline)
            }
        } catch {
            throw StoreError.corrupt.with(detail: "\(what): \(error)")
        }
    }

    /// Wakes the nodes an ingest handed messages to (after its commit). A node that misses it
    /// finds them at its periodic look at its handovers, or the sweep pushes them.
    func announceHandovers(_ handovers: [LiveHandover]) async {
        await notify(Set(handovers.map(\.nodeID)), "a live handover") { node in
            PostgresWakeups.liveChannel(schema: configuration.schema, node: node)
        }
    }

    /// Sends `payload` on each node's channel, one NOTIFY a node; a failure is logged (`what`) and
    /// the next node still told: every caller has a slower path that finds what was announced.
    func notify(
        _ nodes: Set<String>,
        _ what: String,
        payload: String = "",
        channel: (String) -> String
    ) async {
        for node in nodes.sorted() {
            do {
                _ = try await rows("notify \(what)", "SELECT pg_notify(\(channel(node)), \(payload))")
            } catch {
                logger.debug("cannot announce \(what)", metadata: ["error": "\(error)"])
            }
        }
    }

    public func followLiveHandovers(nodeID: String, _ arrived: @escaping @Sendable () -> Void) async {
        await follow(
            PostgresWakeups.liveChannel(schema: configuration.schema, node: nodeID),
            what: "live messages handed over by other nodes",
            arrived
        )
    }

    /// A NOTIFY on the node's chat channel whose payload names the event (conversation and
    /// position, as JSON): ids only, the event's author and text stay sealed in the transcript.
    public func announceChatEvent(_ notice: ChatEventNotice, to nodeIDs: Set<String>) async {
        guard !nodeIDs.isEmpty else { return }
        let payload: String
        do {
            payload = String(decoding: try JSONEncoder().encode(notice), as: UTF8.self)
        } catch {
            logger.error("cannot encode a chat event's notice", metadata: ["error": "\(error)"])
            return
        }
        // Best effort: a node that misses it leaves a gap its app fills at its next resync.
        await notify(nodeIDs, "a chat event", payload: payload) { node in
            PostgresWakeups.chatChannel(schema: configuration.schema, node: node)
        }
    }

    /// LISTENs on the node's chat channel; a payload that does not parse is logged and skipped.
    public func followChatEvents(nodeID: String, _ heard: @escaping @Sendable (ChatEventNotice) -> Void) async {
        let logger = logger
        await follow(
            PostgresWakeups.chatChannel(schema: configuration.schema, node: nodeID),
            what: "chat events announced by other nodes",
            // Missed notices are not looked for: the frames are best effort, the app resyncs.
            missedSome: {},
            payloads: { payload in
                guard let notice = try? JSONDecoder().decode(ChatEventNotice.self, from: Data(payload.utf8)) else {
                    logger.warning("ignored a chat event notice that does not parse")
                    return
                }
                heard(notice)
            }
        )
    }
}

extension PostgresWakeups {
    /// A node's own channel for live handovers: a hash of the schema and the node id, since a
    /// node id may hold characters and lengths a channel name cannot.
    static func liveChannel(schema: String, node: String) -> String {
        "herald_live_" + nodeHash(schema: schema, node: node)
    }

    /// A node's own channel for the chat events other nodes announce to it (a payload each).
    static func chatChannel(schema: String, node: String) -> String {
        "herald_chat_" + nodeHash(schema: schema, node: node)
    }

    /// FNV-1a of the schema and the node id, as 16 hex digits.
    private static func nodeHash(schema: String, node: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array(schema.lowercased().utf8) + [0] + Array(node.utf8) {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
