import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    package func claimWebhookEvents(under lease: StoreWork.Lease) async throws -> [StoredWebhookEvent] {
        let (limit, owner, now, leaseUntil) = (lease.limit, lease.owner, lease.now, lease.until)
        guard limit > 0 else { return [] }
        // A reader looks first: an idle queue (the usual case, and always without webhooks) then
        // costs the single writer nothing. Sending events were due when claimed, so a lapsed
        // lease is found by the same condition.
        let due = try await read { db in
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT EXISTS (SELECT 1 FROM webhook_events
                        WHERE state IN ('pending', 'sending') AND next_attempt_at <= ?)
                    """,
                arguments: [now]
            ) ?? false
        }
        guard due else { return [] }
        return try await write { db in
            // One statement: the due events that are each the first undelivered one of their key
            // (an earlier pending or sending event of the key holds the later ones back).
            try Row.fetchAll(
                db,
                sql: """
                    UPDATE webhook_events
                    SET state = 'sending', owner = ?, lease_until = ?, attempts = attempts + 1, updated_at = ?
                    WHERE sequence IN (
                        SELECT e.sequence FROM webhook_events e
                        WHERE e.state IN ('pending', 'sending')
                          AND ((e.state = 'pending' AND e.next_attempt_at <= ?)
                               OR (e.state = 'sending' AND e.lease_until <= ?))
                          AND NOT EXISTS (
                              SELECT 1 FROM webhook_events f
                              WHERE f.ordering_key = e.ordering_key AND f.state IN ('pending', 'sending')
                                AND f.sequence < e.sequence)
                        ORDER BY e.next_attempt_at, e.sequence
                        LIMIT ?)
                    RETURNING \(StoredWebhookEvent.columns)
                    """,
                arguments: [owner, leaseUntil, now, now, now, limit]
            ).map { try $0.record(StoredWebhookEvent.self) }.sorted { $0.event.createdAt < $1.event.createdAt }
        }
    }

    /// `StoreChange.completeWebhookEvent`, inside the caller's transaction.
    static func completeWebhookEvent(
        id: String,
        owner: String,
        _ completion: WebhookCompletion,
        now: Int64,
        _ db: Database
    ) throws -> ChangeOutcome {
        let (state, nextAttempt, error, deliveredAt) = completion.columns(now: now)
        return try changingRow(
            db,
            sql: """
                UPDATE webhook_events
                SET state = ?, next_attempt_at = COALESCE(?, next_attempt_at),
                    last_error = COALESCE(?, last_error), delivered_at = ?, owner = NULL, lease_until = NULL,
                    updated_at = ?
                WHERE id = ? AND owner = ? AND state = 'sending'
                """,
            arguments: [state.rawValue, nextAttempt, error, deliveredAt, now, id, owner]
        )
    }

    public func webhookEvents(
        app: String,
        state: WebhookEventState?,
        limit: Int,
        after cursor: WebhookEventCursor?
    ) async throws -> [StoredWebhookEvent] {
        try await read { db in
            var sql = "SELECT \(StoredWebhookEvent.columns) FROM webhook_events WHERE app_id = ?"
            var arguments: StatementArguments = [app]
            if let state {
                sql += " AND state = ?"
                arguments += [state.rawValue]
            }
            if let cursor {
                sql += " AND (created_at > ? OR (created_at = ? AND id > ?))"
                arguments += [cursor.createdAt, cursor.createdAt, cursor.id]
            }
            sql += " ORDER BY created_at, id LIMIT ?"
            arguments += [max(0, limit)]
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map { try $0.record(StoredWebhookEvent.self) }
        }
    }

    public func webhookEvents(orderingKey: String, limit: Int) async throws -> [StoredWebhookEvent] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT \(StoredWebhookEvent.columns) FROM webhook_events WHERE ordering_key = ?
                    ORDER BY sequence LIMIT ?
                    """,
                arguments: [orderingKey, max(0, limit)]
            ).map { try $0.record(StoredWebhookEvent.self) }
        }
    }

    public func webhookQueueDepth() async throws -> Int {
        try await read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM webhook_events WHERE state IN ('pending', 'sending')") ?? 0
        }
    }

    package func deleteFinishedWebhookEvents(changedBefore before: Int64) async throws -> Int {
        try await write { db in
            try db.execute(
                sql: "DELETE FROM webhook_events WHERE state IN ('delivered', 'failed') AND updated_at < ?",
                arguments: [before]
            )
            return db.changesCount
        }
    }
}
