import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    /// `StoreChange.scheduleCallback`, inside the caller's transaction.
    static func schedule(
        _ record: CallbackRecord,
        history: CallbackHistoryEntry,
        idempotencyKey: String?,
        _ db: Database
    ) throws -> ChangeOutcome {
        if let key = idempotencyKey,
            try Bool.fetchOne(db, sql: "SELECT 1 FROM callbacks WHERE idempotency_key = ?", arguments: [key]) != nil
        {
            return .duplicate
        }
        try insertCallback(record, idempotencyKey: idempotencyKey, db)
        try appendHistory([history], callbackID: record.id, db)
        return .applied
    }

    public func callback(idempotencyKey: String) async throws -> CallbackRecord? {
        let sql = "SELECT \(CallbackRecord.columns) FROM callbacks WHERE idempotency_key = ?"
        return try await read { db in
            try Row.fetchOne(db, sql: sql, arguments: [idempotencyKey]).map { try $0.record(CallbackRecord.self) }
        }
    }

    /// Writes a callback's row, unclaimed (no `owner`, no `lease_until`): a new one, or one
    /// imported.
    static func insertCallback(_ record: CallbackRecord, idempotencyKey: String?, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO callbacks
                    (id, app_id, user_id, state, sealed_dialog, due_at, expires_at, pushes, version,
                     last_action, idempotency_key, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                record.id, record.appID, record.userID, record.state.rawValue, Data(record.sealedDialog),
                record.dueAt, record.expiresAt, record.pushes, record.version, record.lastAction, idempotencyKey,
                record.createdAt, record.updatedAt,
            ]
        )
    }

    public func callback(id: String) async throws -> CallbackRecord? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT \(CallbackRecord.columns) FROM callbacks WHERE id = ?", arguments: [id])
                .map { try $0.record(CallbackRecord.self) }
        }
    }

    public func pendingCallbacks(limit: Int) async throws -> [CallbackRecord] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT \(CallbackRecord.columns) FROM callbacks
                    WHERE state IN ('scheduled', 'pushed') ORDER BY due_at, id LIMIT ?
                    """,
                arguments: [max(0, limit)]
            ).map { try $0.record(CallbackRecord.self) }
        }
    }

    public func callbackHistory(id: String) async throws -> [CallbackHistoryEntry] {
        try await read { db in
            try Self.callbackHistory(id: id, db)
        }
    }

    /// A callback's history, oldest first.
    static func callbackHistory(id: String, _ db: Database) throws -> [CallbackHistoryEntry] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT \(CallbackHistoryEntry.columns) FROM callback_history
                    WHERE callback_id = ? ORDER BY position
                    """
            ),
            arguments: [id]
        ).map { try $0.record(CallbackHistoryEntry.self) }
    }

    package func claimDueCallbacks(_ lease: StoreWork.Lease) async throws -> [CallbackRecord] {
        let (limit, owner, now, leaseUntil) = (lease.limit, lease.owner, lease.now, lease.until)
        // One statement: the writer is single, and the version moves with the claim.
        return try await claimRecords(
            """
            UPDATE callbacks SET owner = ?, lease_until = ?, version = version + 1
            WHERE id IN (
                SELECT id FROM callbacks
                WHERE ((state = 'scheduled' AND (due_at <= ? OR expires_at <= ?))
                       OR (state = 'pushed' AND expires_at <= ?))
                  AND (lease_until IS NULL OR lease_until < ? OR owner = ?)
                ORDER BY due_at, id LIMIT ?)
            RETURNING \(CallbackRecord.columns)
            """,
            [owner, leaseUntil, now, now, now, now, owner, limit]
        ) { ($0.dueAt, $0.id) < ($1.dueAt, $1.id) }
    }

    /// `StoreChange.changeCallback`, inside the caller's transaction.
    static func change(_ change: CallbackChange, _ db: Database) throws -> ChangeOutcome {
        try db.execute(
            sql: """
                UPDATE callbacks
                SET state = ?, due_at = ?, pushes = pushes + ?, last_action = COALESCE(?, last_action),
                    version = version + 1, owner = NULL, lease_until = NULL, updated_at = ?
                WHERE id = ? AND version = ?
                """,
            arguments: [
                change.state.rawValue, change.dueAt, change.pushed, change.lastAction, change.now,
                change.callbackID, change.expectedVersion,
            ]
        )
        guard db.changesCount == 1 else { return .stale }
        try appendHistory(change.history, callbackID: change.callbackID, db)
        try insertPushes(change.pushes, db)
        if let push = change.answeredPush {
            // Before the answer's events: a receiver hears of the push first.
            let subject = CallbackPushSubject.make(callbackID: change.callbackID, push: push)
            try db.cachedStatement(sql: answeredPushEventSQL).execute(
                arguments: [subject, subject, push, change.now, change.now, change.now, change.callbackID]
            )
        }
        try insert(change.events, db)
        return .applied
    }

    public func nextCallbackDueTime() async throws -> Int64? {
        try await read { db in
            try Int64.fetchOne(
                db,
                sql: """
                    SELECT MIN(CASE WHEN state = 'scheduled' THEN MIN(due_at, expires_at) ELSE expires_at END)
                    FROM callbacks WHERE state IN ('scheduled', 'pushed')
                    """
            )
        }
    }

    public func callbackWebhookEvents(callbackID: String) async throws -> [StoredWebhookEvent] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT \(StoredWebhookEvent.columns) FROM webhook_events
                    WHERE ordering_key = ? ORDER BY sequence
                    """,
                arguments: ["callback:" + callbackID]
            ).map { try $0.record(StoredWebhookEvent.self) }
        }
    }

    package func deleteFinishedCallbacks(changedBefore before: Int64) async throws -> Int {
        try await write { db in
            try db.execute(
                sql: """
                    DELETE FROM callback_history WHERE callback_id IN (
                        SELECT id FROM callbacks
                        WHERE state IN ('connected', 'cancelled', 'expired') AND updated_at < ?)
                    """,
                arguments: [before]
            )
            try db.execute(
                sql: """
                    DELETE FROM callbacks
                    WHERE state IN ('connected', 'cancelled', 'expired') AND updated_at < ?
                    """,
                arguments: [before]
            )
            return db.changesCount
        }
    }

    /// A callback push's `callback.pushed` event, when the push is delivered (the outbox row
    /// named by its push id, already finished), for the callback's app if it has a webhook. Only
    /// while the callback waits for the answer to that push: an answer wrote it already, and an
    /// expired callback's last event is its expiry. `devices`: the push's devices not skipped.
    /// Pushes queued before v24 have a subject without `#` (their event was written when they
    /// were queued): none.
    static let deliveredPushEventSQL = """
        INSERT INTO webhook_events (id, app_id, type, ordering_key, data, created_at, next_attempt_at, updated_at)
        SELECT 'callback.pushed:' || o.subject_id, c.app_id, 'callback.pushed', 'callback:' || c.id,
            json_object('callback_id', c.id,
                'devices', (SELECT COUNT(*) FROM outbox x
                    WHERE x.kind = 'callback' AND x.subject_id = o.subject_id AND x.state <> 'skipped'),
                'push', c.pushes, 'state', 'pushed', 'user_id', c.user_id),
            ?, ?, ?
        FROM outbox o JOIN callbacks c ON c.id = substr(o.subject_id, 1, instr(o.subject_id, '#') - 1)
            JOIN apps a ON a.id = c.app_id
        WHERE o.push_id = ? AND o.kind = 'callback' AND o.state = 'delivered' AND instr(o.subject_id, '#') > 0
            AND c.state = 'pushed' AND CAST(c.pushes AS TEXT) = substr(o.subject_id, instr(o.subject_id, '#') + 1)
            AND a.webhook_url IS NOT NULL
        ON CONFLICT (id) DO NOTHING
        """

    /// The answered push's `callback.pushed` event, unless its delivery wrote it: arguments the
    /// push's subject (twice), its number, the time (three times) and the callback id.
    static let answeredPushEventSQL = """
        INSERT INTO webhook_events (id, app_id, type, ordering_key, data, created_at, next_attempt_at, updated_at)
        SELECT 'callback.pushed:' || ?1, c.app_id, 'callback.pushed', 'callback:' || c.id,
            json_object('callback_id', c.id,
                'devices', (SELECT COUNT(*) FROM outbox x
                    WHERE x.kind = 'callback' AND x.subject_id = ?2 AND x.state <> 'skipped'),
                'push', ?3, 'state', 'pushed', 'user_id', c.user_id),
            ?4, ?5, ?6
        FROM callbacks c JOIN apps a ON a.id = c.app_id
        WHERE c.id = ?7 AND a.webhook_url IS NOT NULL
        ON CONFLICT (id) DO NOTHING
        """

    private static func appendHistory(_ lines: [CallbackHistoryEntry], callbackID: String, _ db: Database) throws {
        for line in lines {
            try db.execute(
                sql: """
                    INSERT INTO callback_history (callback_id, position, at, event, state, action, sequence, next_push_at)
                    VALUES (?, (SELECT COALESCE(MAX(position), 0) + 1 FROM callback_history WHERE callback_id = ?),
                            ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    callbackID, callbackID, line.at, line.event.rawValue, line.state.rawValue, line.action,
                    line.sequence, line.nextPushAt,
                ]
            )
        }
    }

    /// Queues pushes inside the caller's transaction, as `accept` does (callbacks' pushes, and
    /// the pushes a move between stores brings).
    static func insertPushes(_ pushes: [OutboxEntry], _ db: Database) throws {
        for push in pushes {
            let columns = StoredPayload(push.payload)
            try db.execute(
                sql: """
                    INSERT INTO outbox
                        (push_id, device_id, kind, subject_id, priority, network, topic, push_type, apns_priority,
                         apns_id, fcm_priority, collapse_id, attempts, next_attempt_at, expires_at, state,
                         last_reason, created_at, updated_at, waiting_since, now_or_never, trace_context)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    push.pushID, push.deviceID, push.kind.rawValue, push.subjectID, push.priority,
                    push.network.rawValue, columns.topic, columns.pushType, columns.apnsPriority, columns.apnsID,
                    columns.fcmPriority, push.collapseID, push.attempts, push.nextAttemptAt, push.expiresAt,
                    push.state.rawValue, push.lastReason, push.createdAt, push.updatedAt, push.waitingSince,
                    push.nowOrNever, push.traceParent,
                ]
            )
            try db.execute(
                sql: "INSERT INTO outbox_payloads (push_id, payload) VALUES (?, ?)",
                arguments: [push.pushID, columns.body]
            )
        }
    }
}
