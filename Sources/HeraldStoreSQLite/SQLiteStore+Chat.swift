import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    package func appendTranscript(event: TranscriptEvent) async throws -> Int {
        try await write { db in
            let ended = try Row.fetchOne(
                db,
                sql: "SELECT ended_at FROM chats WHERE conversation = ?",
                arguments: [event.conversation]
            )
            if let ended {
                guard (ended[0] as Int64?) == nil else {
                    throw StoreError.conflict.with(detail: "the chat \(event.conversation) has ended")
                }
                try db.execute(
                    sql: "UPDATE chats SET last_event_at = MAX(last_event_at, ?) WHERE conversation = ?",
                    arguments: [event.at, event.conversation]
                )
            } else {
                try db.execute(
                    sql: """
                        INSERT INTO chats (conversation, user_id, started_at, last_event_at) VALUES (?, ?, ?, ?)
                        """,
                    arguments: [event.conversation, event.userID, event.at, event.at]
                )
            }
            let position =
                (try Int.fetchOne(
                    db,
                    sql: "SELECT MAX(position) FROM transcript_events WHERE conversation = ?",
                    arguments: [event.conversation]
                ) ?? 0) + 1
            try Self.insertTranscriptEvent(event, at: position, db)
            return position
        }
    }

    public func transcript(conversation: String, after position: Int) async throws -> [TranscriptEvent] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT conversation, position, user_id, type, sealed_author, from_agent, sealed_text, at
                    FROM transcript_events WHERE conversation = ? AND position > ? ORDER BY position
                    """,
                arguments: [conversation, position]
            ).map { row in
                TranscriptEvent(
                    conversation: row[0],
                    position: row[1],
                    userID: row[2],
                    type: row[3],
                    // NULL until the relay sealed an author stored in the clear by an older version.
                    sealedAuthor: (row[4] as Data?).map { [UInt8]($0) } ?? [],
                    fromAgent: row[5],
                    sealedText: [UInt8](row[6] as Data),
                    at: row[7]
                )
            }
        }
    }

    /// `StoreChange.saveDisconnect`, inside the caller's transaction.
    static func saveDisconnect(_ disconnect: ChatDisconnect, events: [WebhookEvent], _ db: Database) throws {
        try insert(events, db)
        try db.execute(
            sql: """
                INSERT OR REPLACE INTO chat_disconnects (device_id, conversation, position, at, pushed)
                VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [
                disconnect.deviceID, disconnect.conversation, disconnect.position, disconnect.at, disconnect.pushed,
            ]
        )
    }

    /// Removes the disconnect if it is still the one the caller read, with its events.
    static func removeDisconnect(
        _ disconnect: ChatDisconnect,
        events: [WebhookEvent],
        _ db: Database
    ) throws
        -> ChangeOutcome
    {
        let outcome = try changingRow(
            db,
            sql: """
                DELETE FROM chat_disconnects
                WHERE device_id = ? AND conversation = ? AND position = ? AND at = ? AND pushed = ?
                """,
            arguments: [
                disconnect.deviceID, disconnect.conversation, disconnect.position, disconnect.at, disconnect.pushed,
            ]
        )
        if outcome == .applied { try insert(events, db) }
        return outcome
    }

    public func disconnects(conversation: String) async throws -> [ChatDisconnect] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT device_id, position, at, pushed FROM chat_disconnects WHERE conversation = ?",
                arguments: [conversation]
            ).map { row in
                ChatDisconnect(
                    deviceID: row[0],
                    conversation: conversation,
                    position: row[1],
                    at: row[2],
                    pushed: row[3]
                )
            }
        }
    }

    public func pendingDisconnects() async throws -> [ChatDisconnect] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT device_id, conversation, position, at FROM chat_disconnects WHERE pushed = 0"
            ).map { row in
                ChatDisconnect(deviceID: row[0], conversation: row[1], position: row[2], at: row[3], pushed: false)
            }
        }
    }

    // MARK: Chat lifecycle

    public func chat(conversation: String) async throws -> ChatRecord? {
        try await read { db in try Self.chat(db, conversation) }
    }

    /// `StoreChange.endChat`, inside the caller's transaction.
    static func endChat(conversation: String, at: Int64, _ db: Database) throws -> ChangeOutcome {
        try db.execute(
            sql: "UPDATE chats SET ended_at = ? WHERE conversation = ? AND ended_at IS NULL",
            arguments: [at, conversation]
        )
        if db.changesCount > 0 { return .applied }
        return try chat(db, conversation) == nil ? .stale : .duplicate
    }

    package func endIdleChats(at now: Int64, idle: Int64) async throws -> Int {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE chats SET ended_at = last_event_at + ?
                    WHERE ended_at IS NULL AND last_event_at <= ?
                    """,
                arguments: [idle, now - idle]
            )
            return db.changesCount
        }
    }

    package func deleteEndedChats(before endedBefore: Int64) async throws -> Int {
        try await write { db in
            // At most a batch per call, so the writer is never held for long.
            let ended = try String.fetchAll(
                db,
                sql: "SELECT conversation FROM chats WHERE ended_at IS NOT NULL AND ended_at < ? LIMIT 1000",
                arguments: [endedBefore]
            )
            for conversation in ended {
                for table in ["transcript_clear_authors", "transcript_events", "chat_disconnects", "chats"] {
                    try db.cachedStatement(sql: "DELETE FROM \(table) WHERE conversation = ?")
                        .execute(arguments: [conversation])
                }
            }
            try db.execute(
                sql: """
                    DELETE FROM chat_disconnects
                    WHERE at < ? AND conversation NOT IN (SELECT conversation FROM chats)
                    """,
                arguments: [endedBefore]
            )
            return ended.count
        }
    }

    private static func chat(_ db: Database, _ conversation: String) throws -> ChatRecord? {
        try Row.fetchOne(
            db,
            sql: "SELECT user_id, started_at, last_event_at, ended_at FROM chats WHERE conversation = ?",
            arguments: [conversation]
        ).map { row in
            ChatRecord(
                conversation: conversation,
                userID: row[0],
                startedAt: row[1],
                lastEventAt: row[2],
                endedAt: row[3]
            )
        }
    }

    /// Writes a transcript event's row at `position` in its conversation: a new one (the next
    /// position), or one imported (its own).
    static func insertTranscriptEvent(_ event: TranscriptEvent, at position: Int, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO transcript_events
                    (conversation, position, user_id, type, sealed_author, from_agent, sealed_text, at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                event.conversation, position, event.userID, event.type, Data(event.sealedAuthor),
                event.fromAgent, Data(event.sealedText), event.at,
            ]
        )
    }
}
