import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    public func clearSenders(limit: Int) async throws -> [ClearSender] {
        try await read { db in
            let messages = try Row.fetchAll(
                db,
                sql: "SELECT message_id, sender_id, sender_name, created_at FROM message_clear_senders LIMIT ?",
                arguments: [max(0, limit)]
            ).map { ClearSender(record: .message(id: $0[0]), senderID: $0[1], senderName: $0[2], at: $0[3]) }
            let events = try Row.fetchAll(
                db,
                sql: """
                    SELECT conversation, position, author_id, author_name, at FROM transcript_clear_authors LIMIT ?
                    """,
                arguments: [max(0, limit - messages.count)]
            ).map { row in
                ClearSender(
                    record: .transcriptEvent(conversation: row[0], position: row[1]),
                    senderID: row[2],
                    senderName: row[3],
                    at: row[4]
                )
            }
            return messages + events
        }
    }

    /// `StoreChange.sealSenders`, inside the caller's transaction.
    static func sealSenders(_ sealed: [ClearSender.Record: [UInt8]], _ db: Database) throws {
        for (record, sender) in sealed {
            switch record {
            case .message(let id):
                try db.execute(sql: "DELETE FROM message_clear_senders WHERE message_id = ?", arguments: [id])
                // Only a sender still in the clear is replaced.
                guard db.changesCount > 0 else { continue }
                try db.execute(
                    sql: "UPDATE messages SET sealed_sender = ? WHERE id = ?",
                    arguments: [Data(sender), id]
                )
            case .transcriptEvent(let conversation, let position):
                try db.execute(
                    sql: "DELETE FROM transcript_clear_authors WHERE conversation = ? AND position = ?",
                    arguments: [conversation, position]
                )
                guard db.changesCount > 0 else { continue }
                try db.execute(
                    sql: "UPDATE transcript_events SET sealed_author = ? WHERE conversation = ? AND position = ?",
                    arguments: [Data(sender), conversation, position]
                )
            }
        }
    }

    /// Whether a sender is still in the clear.
    static func clearSendersLeft(_ db: Database) throws -> Bool {
        let remaining =
            try Int.fetchOne(
                db,
                sql: """
                    SELECT (SELECT COUNT(*) FROM message_clear_senders) + (SELECT COUNT(*) FROM transcript_clear_authors)
                    """
            ) ?? 0
        return remaining > 0
    }

    /// After the last clear sender is sealed: it is zeroed in the database (secure_delete), but
    /// older copies of its pages may still be in the WAL: checkpoint and truncate it. Best effort:
    /// if a reader holds the WAL, later writes overwrite those frames anyway.
    func forgetClearSenders() async {
        _ = try? await pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
    }
}
