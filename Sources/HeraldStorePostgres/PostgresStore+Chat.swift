public import HeraldStore
import NIOCore
import PostgresNIO

extension PostgresStore {
    public func appendTranscript(_ event: TranscriptEvent) async throws -> Int {
        try await transaction("append to a transcript") { [logger] connection -> Int in
            // The conversation's counter row is taken (and locked) by the upsert, so concurrent
            // appends on any node get the next positions one after the other.
            let rows = try await connection.run(
                """
                WITH head AS (
                    INSERT INTO transcript_heads (conversation, last_position) VALUES (\(event.conversation), 1)
                    ON CONFLICT (conversation) DO UPDATE SET last_position = transcript_heads.last_position + 1
                    RETURNING last_position)
                INSERT INTO transcript_events
                    (conversation, position, user_id, type, author_id, author_name, from_agent, sealed_text, at)
                SELECT \(event.conversation), head.last_position, \(event.userID), \(event.type), \(event.authorID),
                    \(event.authorName), \(event.fromAgent), \(ByteBuffer(event.sealedText)), \(event.at)
                FROM head
                RETURNING position
                """,
                logger: logger
            )
            var columns = try Columns(rows.first.unwrap())
            return Int(try columns.next(Int64.self))
        }
    }

    public func transcript(conversation: String, after position: Int) async throws -> [TranscriptEvent] {
        try await rows(
            "read a transcript",
            """
            SELECT conversation, position, user_id, type, author_id, author_name, from_agent, sealed_text, at
            FROM transcript_events WHERE conversation = \(conversation) AND position > \(Int64(position))
            ORDER BY position
            """
        ).map { row in
            var columns = Columns(row)
            return TranscriptEvent(
                conversation: try columns.next(),
                position: Int(try columns.next(Int64.self)),
                userID: try columns.next(),
                type: try columns.next(),
                authorID: try columns.next(),
                authorName: try columns.next(),
                fromAgent: try columns.next(),
                sealedText: try columns.bytes(),
                at: try columns.next()
            )
        }
    }

    public func saveDisconnect(_ disconnect: ChatDisconnect) async throws {
        try await transaction("save a chat disconnect") { [logger] connection in
            try await connection.run(
                """
                INSERT INTO chat_disconnects (device_id, conversation, position, at, pushed)
                VALUES (\(disconnect.deviceID), \(disconnect.conversation), \(Int64(disconnect.position)),
                    \(disconnect.at), \(disconnect.pushed))
                ON CONFLICT (device_id, conversation) DO UPDATE SET position = EXCLUDED.position,
                    at = EXCLUDED.at, pushed = EXCLUDED.pushed
                """,
                logger: logger
            )
        }
    }

    public func markDisconnectPushed(deviceID: String, conversation: String) async throws {
        try await transaction("mark a chat disconnect pushed") { [logger] connection in
            try await connection.run(
                """
                UPDATE chat_disconnects SET pushed = true
                WHERE device_id = \(deviceID) AND conversation = \(conversation)
                """,
                logger: logger
            )
        }
    }

    public func removeDisconnect(deviceID: String, conversation: String) async throws -> ChatDisconnect? {
        try await transaction("remove a chat disconnect") { [logger] connection -> ChatDisconnect? in
            let rows = try await connection.run(
                """
                DELETE FROM chat_disconnects WHERE device_id = \(deviceID) AND conversation = \(conversation)
                RETURNING position, at, pushed
                """,
                logger: logger
            )
            return try rows.first.map { row in
                let (position, at, pushed) = try row.decode((Int64, Int64, Bool).self)
                return ChatDisconnect(
                    deviceID: deviceID,
                    conversation: conversation,
                    position: Int(position),
                    at: at,
                    pushed: pushed
                )
            }
        }
    }

    public func disconnects(conversation: String) async throws -> [ChatDisconnect] {
        let rows = try await rows(
            "read a chat's disconnects",
            "SELECT device_id, position, at, pushed FROM chat_disconnects WHERE conversation = \(conversation)"
        )
        do {
            return try rows.map { row in
                let (deviceID, position, at, pushed) = try row.decode((String, Int64, Int64, Bool).self)
                return ChatDisconnect(
                    deviceID: deviceID,
                    conversation: conversation,
                    position: Int(position),
                    at: at,
                    pushed: pushed
                )
            }
        } catch {
            throw StoreError.corrupt.with(detail: "read a chat's disconnects: \(error)")
        }
    }

    public func pendingDisconnects() async throws -> [ChatDisconnect] {
        let rows = try await rows(
            "read the pending chat disconnects",
            "SELECT device_id, conversation, position, at FROM chat_disconnects WHERE NOT pushed"
        )
        do {
            return try rows.map { row in
                let (deviceID, conversation, position, at) = try row.decode((String, String, Int64, Int64).self)
                return ChatDisconnect(
                    deviceID: deviceID,
                    conversation: conversation,
                    position: Int(position),
                    at: at,
                    pushed: false
                )
            }
        } catch {
            throw StoreError.corrupt.with(detail: "read the pending chat disconnects: \(error)")
        }
    }
}
