import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    /// `StoreChange.saveLiveSession`, inside the caller's transaction.
    static func saveLiveSession(_ session: LiveSessionRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO live_sessions (device_id, node_id, session_id, conversation, expires_at)
                VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (device_id) DO UPDATE SET node_id = excluded.node_id,
                    session_id = excluded.session_id, conversation = excluded.conversation,
                    expires_at = excluded.expires_at
                """,
            arguments: [
                session.deviceID, session.nodeID, session.sessionID, session.conversation, session.expiresAt,
            ]
        )
    }

    /// `StoreChange.renewLiveSessions`, inside the caller's transaction.
    static func renewLiveSessions(nodeID: String, keeping sessionIDs: Set<String>, until: Int64, _ db: Database) throws
    {
        let renew = try db.cachedStatement(
            sql: "UPDATE live_sessions SET expires_at = ? WHERE node_id = ? AND session_id = ?"
        )
        for sessionID in sessionIDs { try renew.execute(arguments: [until, nodeID, sessionID]) }
    }

    public func liveSessions(deviceIDs: [String], now: Int64) async throws -> [LiveSessionRecord] {
        guard !deviceIDs.isEmpty else { return [] }
        return try await read { db in
            let marks = Array(repeating: "?", count: deviceIDs.count).joined(separator: ", ")
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT device_id, node_id, session_id, conversation, expires_at FROM live_sessions
                    WHERE device_id IN (\(marks)) AND expires_at > ?
                    """,
                arguments: StatementArguments(deviceIDs.map { $0 as any DatabaseValueConvertible } + [now])
            ).map { row in
                LiveSessionRecord(
                    deviceID: row[0],
                    nodeID: row[1],
                    sessionID: row[2],
                    conversation: row[3],
                    expiresAt: row[4]
                )
            }
        }
    }

    package func takeLiveHandovers(for nodeID: String) async throws -> [LiveHandover] {
        try await write { db in
            let taken = try Row.fetchAll(
                db,
                sql: """
                    SELECT message_id, device_id, node_id, deadline FROM live_handovers
                    WHERE node_id = ? AND taken = 0 ORDER BY deadline, message_id
                    """,
                arguments: [nodeID]
            ).map(Self.handover(_:))
            try db.execute(
                sql: "UPDATE live_handovers SET taken = 1 WHERE node_id = ? AND taken = 0",
                arguments: [nodeID]
            )
            return taken
        }
    }

    package func takeOverdueLiveHandovers(at now: Int64, limit: Int) async throws -> [LiveHandover] {
        try await write { db in
            let overdue = try Row.fetchAll(
                db,
                sql: """
                    SELECT message_id, device_id, node_id, deadline FROM live_handovers
                    WHERE deadline <= ? ORDER BY deadline, message_id LIMIT ?
                    """,
                arguments: [now, limit]
            ).map(Self.handover(_:))
            for handover in overdue {
                try db.execute(
                    sql: "DELETE FROM live_handovers WHERE message_id = ? AND device_id = ?",
                    arguments: [handover.messageID, handover.deviceID]
                )
            }
            return overdue
        }
    }

    private static func handover(_ row: Row) -> LiveHandover {
        LiveHandover(messageID: row[0], deviceID: row[1], nodeID: row[2], deadline: row[3])
    }
}
