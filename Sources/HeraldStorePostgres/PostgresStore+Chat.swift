public import HeraldStore
import NIOCore
import PostgresNIO

extension PostgresStore {
    package func appendTranscript(event: TranscriptEvent) async throws -> Int {
        try await transaction("append to a transcript") { [logger] connection -> Int in
            // The chat's row starts with its first event and is locked by every append, so an
            // end and an append on two nodes happen one after the other.
            let chat = try await connection.run(
                """
                INSERT INTO chats (conversation, user_id, started_at, last_event_at)
                VALUES (\(event.conversation), \(event.userID), \(event.at), \(event.at))
                ON CONFLICT (conversation) DO UPDATE
                    SET last_event_at = GREATEST(chats.last_event_at, EXCLUDED.last_event_at)
                RETURNING ended_at
                """,
                logger: logger
            )
            if let row = chat.first, try row.decode(Int64?.self) != nil {
                throw StoreError.conflict.with(detail: "the chat \(event.conversation) has ended")
            }
            // The conversation's counter row is taken (and locked) by the upsert, so concurrent
            // appends on any node get the next positions one after the other.
            let rows = try await connection.run(
                """
                WITH head AS (
                    INSERT INTO transcript_heads (conversation, last_position) VALUES (\(event.conversation), 1)
                    ON CONFLICT (conversation) DO UPDATE SET last_position = transcript_heads.last_position + 1
                    RETURNING last_position)
                INSERT INTO transcript_events
                    (conversation, position, user_id, type, sealed_author, from_agent, sealed_text, at)
                SELECT \(event.conversation), head.last_position, \(event.userID), \(event.type),
                    \(ByteBuffer(event.sealedAuthor)), \(event.fromAgent), \(ByteBuffer(event.sealedText)), \(event.at)
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
            SELECT conversation, position, user_id, type, sealed_author, from_agent, sealed_text, at
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
                sealedAuthor: try columns.bytes(),
                fromAgent: try columns.next(),
                sealedText: try columns.bytes(),
                at: try columns.next()
            )
        }
    }

    /// `StoreChange.saveDisconnect`, inside the caller's transaction.
    static func saveDisconnect(
        _ disconnect: ChatDisconnect,
        events: [WebhookEvent],
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        try await insert(events, on: connection, logger: logger)
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

    /// `StoreChange.markDisconnectPushed`, inside the caller's transaction.
    static func markDisconnectPushed(
        _ deviceID: String,
        _ conversation: String,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        let marked = try await connection.run(
            """
            UPDATE chat_disconnects SET pushed = true
            WHERE device_id = \(deviceID) AND conversation = \(conversation)
            RETURNING device_id
            """,
            logger: logger
        )
        return marked.isEmpty ? .stale : .applied
    }

    /// Removes the disconnect if it is still the one the caller read, with its events.
    static func removeDisconnect(
        _ disconnect: ChatDisconnect,
        events: [WebhookEvent],
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        let removed = try await connection.run(
            """
            DELETE FROM chat_disconnects
            WHERE device_id = \(disconnect.deviceID) AND conversation = \(disconnect.conversation)
                AND position = \(Int64(disconnect.position)) AND at = \(disconnect.at) AND pushed = \(disconnect.pushed)
            RETURNING device_id
            """,
            logger: logger
        )
        if removed.isEmpty { return .stale }
        try await insert(events, on: connection, logger: logger)
        return .applied
    }

    public func disconnects(conversation: String) async throws -> [ChatDisconnect] {
        try await disconnects(
            "read a chat's disconnects",
            "SELECT \(unescaped: Self.disconnectColumns) FROM chat_disconnects WHERE conversation = \(conversation)"
        )
    }

    public func pendingDisconnects() async throws -> [ChatDisconnect] {
        try await disconnects(
            "read the pending chat disconnects",
            "SELECT \(unescaped: Self.disconnectColumns) FROM chat_disconnects WHERE NOT pushed"
        )
    }

    /// The columns `disconnects(_:_:)` reads, in its order.
    private static let disconnectColumns = "device_id, conversation, position, at, pushed"

    private func disconnects(_ what: String, _ query: PostgresQuery) async throws -> [ChatDisconnect] {
        let rows = try await rows(what, query)
        do {
            return try rows.map { row in
                let (deviceID, conversation, position, at, pushed) = try row.decode(
                    (String, String, Int64, Int64, Bool).self
                )
                return ChatDisconnect(
                    deviceID: deviceID,
                    conversation: conversation,
                    position: Int(position),
                    at: at,
                    pushed: pushed
                )
            }
        } catch {
            throw StoreError.corrupt.with(detail: "\(what): \(error)")
        }
    }

    // MARK: Chat lifecycle

    public func chat(conversation: String) async throws -> ChatRecord? {
        try await rows(
            "read a chat",
            "SELECT user_id, started_at, last_event_at, ended_at FROM chats WHERE conversation = \(conversation)"
        ).first.map { row in try Self.chat(conversation, row) }
    }

    /// `StoreChange.endChat`, inside the caller's transaction.
    static func endChat(
        conversation: String,
        at: Int64,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        let ended = try await connection.run(
            """
            UPDATE chats SET ended_at = \(at) WHERE conversation = \(conversation) AND ended_at IS NULL
            RETURNING conversation
            """,
            logger: logger
        )
        if !ended.isEmpty { return .applied }
        let found = try await connection.run(
            "SELECT 1 FROM chats WHERE conversation = \(conversation)",
            logger: logger
        )
        return found.isEmpty ? .stale : .duplicate
    }

    package func endIdleChats(at now: Int64, idle: Int64) async throws -> Int {
        try await transaction("end idle chats") { [logger] connection -> Int in
            try await connection.run(
                """
                UPDATE chats SET ended_at = last_event_at + \(idle)
                WHERE ended_at IS NULL AND last_event_at <= \(now - idle)
                RETURNING 1
                """,
                logger: logger
            ).count
        }
    }

    package func deleteEndedChats(before endedBefore: Int64) async throws -> Int {
        try await transaction("delete ended chats") { [logger] connection -> Int in
            // At most a batch per call; chats another node is deleting now are left to it.
            let ended = try await connection.run(
                """
                DELETE FROM chats WHERE conversation IN (
                    SELECT conversation FROM chats WHERE ended_at IS NOT NULL AND ended_at < \(endedBefore)
                    LIMIT 1000 FOR UPDATE SKIP LOCKED)
                RETURNING conversation
                """,
                logger: logger
            ).map { row in try row.decode(String.self) }
            if !ended.isEmpty {
                for table in ["transcript_events", "transcript_heads", "chat_disconnects"] {
                    try await connection.run(
                        "DELETE FROM \(unescaped: table) WHERE conversation = ANY(\(ended))",
                        logger: logger
                    )
                }
            }
            try await connection.run(
                """
                DELETE FROM chat_disconnects d
                WHERE d.at < \(endedBefore) AND NOT EXISTS (SELECT 1 FROM chats c WHERE c.conversation = d.conversation)
                """,
                logger: logger
            )
            return ended.count
        }
    }

    private static func chat(_ conversation: String, _ row: PostgresRow) throws -> ChatRecord {
        let (userID, startedAt, lastEventAt, endedAt) = try row.decode((String, Int64, Int64, Int64?).self)
        return ChatRecord(
            conversation: conversation,
            userID: userID,
            startedAt: startedAt,
            lastEventAt: lastEventAt,
            endedAt: endedAt
        )
    }

    // MARK: Sealing

    /// This engine has never stored a sender in the clear.
    public func clearSenders(limit: Int) async throws -> [ClearSender] { [] }
}
