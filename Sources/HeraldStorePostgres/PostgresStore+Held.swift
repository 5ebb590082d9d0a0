public import HeraldStore
import Logging
import NIOCore
import PostgresNIO

/// Messages held for users without a device, shared by every node on the database.
///
/// A hold and the read of a user's held messages take the same transaction-scoped advisory lock, so
/// they are ordered: an activation commits its device before it releases, and a hold that comes
/// after that release sees the device (`stale`), one that comes before it is seen by it.
extension PostgresStore {
    /// `StoreChange.hold`, inside the caller's transaction.
    static func hold(
        _ ingest: Ingest,
        until: Int64,
        appID: String?,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        guard let message = ingest.message else {
            throw StoreError.corrupt.with(detail: "a held ingest needs its message")
        }
        try await lockHolds(of: message.userID, on: connection, logger: logger)
        if let key = ingest.idempotencyKey, try await receipt(key, on: connection, logger: logger) != nil {
            return .duplicate
        }
        // A device that activated since the ingest read none: it is pushed to instead.
        let devices = try await connection.run(
            """
            SELECT 1 FROM devices
            WHERE user_id = \(message.userID) AND (\(appID)::text IS NULL OR app_id = \(appID)) LIMIT 1
            """,
            logger: logger
        )
        if !devices.isEmpty { return .stale }
        if let key = ingest.idempotencyKey {
            // Of two ingests with one key at once, the second waits for the first's commit
            // here, inserts nothing and answers the first's receipt; nothing was written yet.
            let inserted = try await connection.run(
                """
                INSERT INTO ingests (idempotency_key, receipt, created_at)
                VALUES (\(key), \(ByteBuffer(bytes: ingest.receipt)), \(message.createdAt))
                ON CONFLICT (idempotency_key) DO NOTHING RETURNING idempotency_key
                """,
                logger: logger
            )
            if inserted.isEmpty { return .duplicate }
        }
        try await connection.run(
            """
            INSERT INTO messages
                (id, user_id, conversation, sealed_sender, sealed_text, created_at, expires_at, sealed_push_options)
            VALUES (\(message.id), \(message.userID), \(message.conversation),
                \(ByteBuffer(bytes: message.sealedSender)), \(ByteBuffer(bytes: message.sealedText)),
                \(message.createdAt), \(message.expiresAt), \(message.sealedPushOptions.map { ByteBuffer(bytes: $0) }))
            """,
            logger: logger
        )
        try await connection.run(
            """
            INSERT INTO held_messages (message_id, user_id, app_id, held_at, held_until)
            VALUES (\(message.id), \(message.userID), \(appID), \(message.createdAt), \(until))
            """,
            logger: logger
        )
        return .applied
    }

    public func heldMessages(userID: String, now: Int64) async throws -> [HeldMessage] {
        try await transaction("read held messages") { [logger] connection -> [HeldMessage] in
            // After a hold that checked the user's devices before this node's activation
            // committed: its message is read here, not missed.
            try await Self.lockHolds(of: userID, on: connection, logger: logger)
            return try await connection.run(
                """
                SELECT message_id, user_id, app_id, held_at, held_until FROM held_messages
                WHERE user_id = \(userID) AND held_until > \(now) ORDER BY held_at, message_id
                """,
                logger: logger
            ).map { row in
                let (id, user, app, heldAt, heldUntil) = try row.decode((String, String, String?, Int64, Int64).self)
                return HeldMessage(messageID: id, userID: user, appID: app, heldAt: heldAt, heldUntil: heldUntil)
            }
        }
    }

    /// `StoreChange.releaseHeld`, inside the caller's transaction.
    static func release(
        _ release: HeldRelease,
        now: Int64,
        on connection: PostgresConnection,
        logger: Logger,
        after: inout AfterCommit
    ) async throws -> ChangeOutcome {
        // Of two releases at once, the second waits for the first's row lock, then finds the row
        // gone and writes nothing.
        let taken = try await connection.run(
            """
            DELETE FROM held_messages WHERE message_id = \(release.messageID) AND held_until > \(now)
            RETURNING message_id
            """,
            logger: logger
        )
        guard !taken.isEmpty else { return .stale }
        try await insertPushes(release.pushes, on: connection, logger: logger)
        after.queued = true
        return .applied
    }

    package func endHolds(at now: Int64) async throws -> Int {
        try await rows(
            "end holds",
            "DELETE FROM held_messages WHERE held_until <= \(now) RETURNING message_id"
        ).count
    }

    /// The receipt stored for an idempotency key, if the key was used.
    private static func receipt(
        _ key: String,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws
        -> [UInt8]?
    {
        let seen = try await connection.run(
            "SELECT receipt FROM ingests WHERE idempotency_key = \(key)",
            logger: logger
        )
        guard let row = seen.first else { return nil }
        var columns = Columns(row)
        return try columns.bytes()
    }

    /// Orders the holds and releases of one user across nodes (see the type's comment).
    private static func lockHolds(of userID: String, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run(
            "SELECT pg_advisory_xact_lock(hashtextextended(\("herald.held:" + userID), 0))",
            logger: logger
        )
    }
}
