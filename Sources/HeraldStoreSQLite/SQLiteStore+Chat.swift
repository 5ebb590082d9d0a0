import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    public func appendTranscript(_ event: TranscriptEvent) async throws -> Int {
        try await write { db in
            let position =
                (try Int.fetchOne(
                    db,
                    sql: "SELECT MAX(position) FROM transcript_events WHERE conversation = ?",
                    arguments: [event.conversation]
                ) ?? 0) + 1
            try db.execute(
                sql: """
                    INSERT INTO transcript_events
                        (conversation, position, user_id, type, author_id, author_name, from_agent, sealed_text, at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    event.conversation, position, event.userID, event.type, event.authorID, event.authorName,
                    event.fromAgent, Data(event.sealedText), event.at,
                ]
            )
            return position
        }
    }

    public func transcript(conversation: String, after position: Int) async throws -> [TranscriptEvent] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT conversation, position, user_id, type, author_id, author_name, from_agent, sealed_text, at
                    FROM transcript_events WHERE conversation = ? AND position > ? ORDER BY position
                    """,
                arguments: [conversation, position]
            ).map { row in
                TranscriptEvent(
                    conversation: row[0],
                    position: row[1],
                    userID: row[2],
                    type: row[3],
                    authorID: row[4],
                    authorName: row[5],
                    fromAgent: row[6],
                    sealedText: [UInt8](row[7] as Data),
                    at: row[8]
                )
            }
        }
    }

    public func saveDisconnect(_ disconnect: ChatDisconnect) async throws {
        try await write { db in
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
    }

    public func markDisconnectPushed(deviceID: String, conversation: String) async throws {
        try await write { db in
            try db.execute(
                sql: "UPDATE chat_disconnects SET pushed = 1 WHERE device_id = ? AND conversation = ?",
                arguments: [deviceID, conversation]
            )
        }
    }

    public func removeDisconnect(deviceID: String, conversation: String) async throws -> ChatDisconnect? {
        try await write { db in
            let found = try Row.fetchOne(
                db,
                sql: "SELECT position, at, pushed FROM chat_disconnects WHERE device_id = ? AND conversation = ?",
                arguments: [deviceID, conversation]
            ).map { row in
                ChatDisconnect(
                    deviceID: deviceID,
                    conversation: conversation,
                    position: row[0],
                    at: row[1],
                    pushed: row[2]
                )
            }
            try db.execute(
                sql: "DELETE FROM chat_disconnects WHERE device_id = ? AND conversation = ?",
                arguments: [deviceID, conversation]
            )
            return found
        }
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
}
