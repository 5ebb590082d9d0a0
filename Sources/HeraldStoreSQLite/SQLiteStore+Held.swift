import Foundation
import GRDB
public import HeraldStore

/// Messages held for users without a device: one writer, so each write below is alone with the
/// devices it checks and the holds it takes.
extension SQLiteStore {
    /// `StoreChange.hold`, inside the caller's transaction.
    static func hold(_ ingest: Ingest, until: Int64, appID: String?, _ db: Database) throws -> ChangeOutcome {
        guard let message = ingest.message else {
            throw StoreError.corrupt.with(detail: "a held ingest needs its message")
        }
        if let key = ingest.idempotencyKey,
            try Data.fetchOne(
                db.cachedStatement(sql: "SELECT receipt FROM ingests WHERE idempotency_key = ?"),
                arguments: [key]
            ) != nil
        {
            return .duplicate
        }
        // A device that activated since the ingest read none: it is pushed to instead.
        let hasDevice =
            try Bool.fetchOne(
                db,
                sql: "SELECT EXISTS (SELECT 1 FROM devices WHERE user_id = ? AND (? IS NULL OR app_id = ?))",
                arguments: [message.userID, appID, appID]
            ) ?? false
        if hasDevice { return .stale }
        let written = Ingest(
            idempotencyKey: ingest.idempotencyKey,
            message: message,
            pushes: [],
            receipt: ingest.receipt
        )
        _ = try insert(written, db)
        try db.execute(
            sql: """
                INSERT INTO held_messages (message_id, user_id, app_id, held_at, held_until) VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [message.id, message.userID, appID, message.createdAt, until]
        )
        return .applied
    }

    public func heldMessages(userID: String, now: Int64) async throws -> [HeldMessage] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT message_id, user_id, app_id, held_at, held_until FROM held_messages
                    WHERE user_id = ? AND held_until > ? ORDER BY held_at, message_id
                    """,
                arguments: [userID, now]
            ).map { HeldMessage(messageID: $0[0], userID: $0[1], appID: $0[2], heldAt: $0[3], heldUntil: $0[4]) }
        }
    }

    /// `StoreChange.releaseHeld`, inside the caller's transaction.
    static func release(_ release: HeldRelease, now: Int64, _ db: Database) throws -> ChangeOutcome {
        try db.cachedStatement(sql: "DELETE FROM held_messages WHERE message_id = ? AND held_until > ?")
            .execute(arguments: [release.messageID, now])
        // Taken by an earlier release (or ended): its pushes were written then, or never are.
        guard db.changesCount == 1 else { return .stale }
        _ = try insert(Ingest(idempotencyKey: nil, message: nil, pushes: release.pushes, receipt: []), db)
        return .applied
    }

    package func endHolds(at now: Int64) async throws -> Int {
        try await write { db in
            try db.execute(sql: "DELETE FROM held_messages WHERE held_until <= ?", arguments: [now])
            return db.changesCount
        }
    }
}
