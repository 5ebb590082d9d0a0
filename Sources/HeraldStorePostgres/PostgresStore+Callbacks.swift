public import HeraldStore
import Logging
import NIOCore
import PostgresNIO

extension PostgresStore {
    /// `StoreChange.scheduleCallback`, inside the caller's transaction.
    static func schedule(
        _ record: CallbackRecord,
        history: CallbackHistoryEntry,
        idempotencyKey: String?,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        // Of two schedules with one key, the second waits for the first's commit and inserts
        // nothing.
        let inserted = try await connection.run(
            """
            INSERT INTO callbacks
                (id, app_id, user_id, state, sealed_dialog, due_at, expires_at, pushes, version, last_action,
                 idempotency_key, created_at, updated_at)
            VALUES (\(record.id), \(record.appID), \(record.userID), \(record.state.rawValue),
                \(ByteBuffer(bytes: record.sealedDialog)), \(record.dueAt), \(record.expiresAt), \(record.pushes),
                \(Int64(record.version)), \(record.lastAction), \(idempotencyKey), \(record.createdAt),
                \(record.updatedAt))
            ON CONFLICT (idempotency_key) DO NOTHING
            RETURNING id
            """,
            logger: logger
        )
        if inserted.isEmpty { return .duplicate }
        try await appendHistory([history], callbackID: record.id, on: connection, logger: logger)
        return .applied
    }

    public func callback(idempotencyKey: String) async throws -> CallbackRecord? {
        try await rows(
            "read a callback by its key",
            "SELECT \(unescaped: CallbackRecord.columns) FROM callbacks WHERE idempotency_key = \(idempotencyKey)"
        ).first.map { try $0.record(CallbackRecord.self) }
    }

    public func callback(id: String) async throws -> CallbackRecord? {
        try await rows(
            "read a callback",
            "SELECT \(unescaped: CallbackRecord.columns) FROM callbacks WHERE id = \(id)"
        ).first.map { try $0.record(CallbackRecord.self) }
    }

    public func pendingCallbacks(limit: Int) async throws -> [CallbackRecord] {
        try await rows(
            "read the pending callbacks",
            """
            SELECT \(unescaped: CallbackRecord.columns) FROM callbacks
            WHERE state IN ('scheduled', 'pushed') ORDER BY due_at, id COLLATE "C" LIMIT \(Int64(max(0, limit)))
            """
        ).map { try $0.record(CallbackRecord.self) }
    }

    public func callbackHistory(id: String) async throws -> [CallbackHistoryEntry] {
        try await rows(
            "read a callback's history",
            """
            SELECT \(unescaped: CallbackHistoryEntry.columns) FROM callback_history
            WHERE callback_id = \(id) ORDER BY position
            """
        ).map { try $0.record(CallbackHistoryEntry.self) }
    }

    package func claimDueCallbacks(_ lease: StoreWork.Lease) async throws -> [CallbackRecord] {
        let (limit, owner, now, leaseUntil) = (lease.limit, lease.owner, lease.now, lease.until)
        // One statement; SKIP LOCKED leaves a callback another node is claiming or changing to it.
        return try await rows(
            "claim due callbacks",
            """
            WITH due AS (
                SELECT id FROM callbacks
                WHERE ((state = 'scheduled' AND (due_at <= \(now) OR expires_at <= \(now)))
                       OR (state = 'pushed' AND expires_at <= \(now)))
                  AND (lease_until IS NULL OR lease_until < \(now) OR owner = \(owner))
                ORDER BY due_at, id LIMIT \(Int64(limit))
                FOR UPDATE SKIP LOCKED)
            UPDATE callbacks c SET owner = \(owner), lease_until = \(leaseUntil), version = c.version + 1
            FROM due WHERE c.id = due.id
            RETURNING \(unescaped: CallbackRecord.columns.split(separator: ",").map { "c." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: ", "))
            """
        ).map { try $0.record(CallbackRecord.self) }.sorted { ($0.dueAt, $0.id) < ($1.dueAt, $1.id) }
    }

    /// `StoreChange.changeCallback`, inside the caller's transaction.
    static func change(
        _ change: CallbackChange,
        on connection: PostgresConnection,
        logger: Logger,
        after: inout AfterCommit
    ) async throws -> ChangeOutcome {
        let updated = try await connection.run(
            """
            UPDATE callbacks
            SET state = \(change.state.rawValue), due_at = \(change.dueAt), pushes = pushes + \(change.pushed),
                last_action = COALESCE(\(change.lastAction), last_action), version = version + 1,
                owner = NULL, lease_until = NULL, updated_at = \(change.now)
            WHERE id = \(change.callbackID) AND version = \(Int64(change.expectedVersion))
            RETURNING id
            """,
            logger: logger
        )
        guard !updated.isEmpty else { return .stale }
        try await appendHistory(change.history, callbackID: change.callbackID, on: connection, logger: logger)
        try await insertPushes(change.pushes, on: connection, logger: logger)
        if !change.pushes.isEmpty { after.queued = true }
        if let push = change.answeredPush {
            // Before the answer's events, as on SQLite (`answeredPushEventSQL`): a receiver
            // hears of the push first; nothing if its delivery wrote it.
            let subject = CallbackPushSubject.make(callbackID: change.callbackID, push: push)
            let id = CallbackPushSubject.pushedEventID(callbackID: change.callbackID, push: push)
            try await connection.run(
                """
                INSERT INTO webhook_events
                    (id, app_id, type, ordering_key, data, created_at, next_attempt_at, updated_at)
                SELECT \(id), c.app_id, 'callback.pushed', 'callback:' || c.id,
                    json_build_object('callback_id', c.id,
                        'devices', (SELECT count(*) FROM outbox x
                            WHERE x.kind = 'callback' AND x.subject_id = \(subject) AND x.state <> 'skipped'),
                        'push', \(Int64(push)), 'state', 'pushed'::text, 'user_id', c.user_id)::text,
                    \(change.now), \(change.now), \(change.now)
                FROM callbacks c JOIN apps a ON a.id = c.app_id
                WHERE c.id = \(change.callbackID) AND a.webhook_url IS NOT NULL
                ON CONFLICT (id) DO NOTHING
                """,
                logger: logger
            )
        }
        try await insert(change.events, on: connection, logger: logger)
        return .applied
    }

    public func nextCallbackDueTime() async throws -> Int64? {
        let rows = try await rows(
            "read the next due callback",
            """
            SELECT MIN(CASE WHEN state = 'scheduled' THEN LEAST(due_at, expires_at) ELSE expires_at END)
            FROM callbacks WHERE state IN ('scheduled', 'pushed')
            """
        )
        do {
            return try rows.first?.decode(Int64?.self) ?? nil
        } catch {
            throw StoreError.corrupt.with(detail: "read the next due callback: \(error)")
        }
    }

    public func callbackWebhookEvents(callbackID: String) async throws -> [StoredWebhookEvent] {
        let key = "callback:" + callbackID
        return try await rows(
            "read a callback's webhook events",
            """
            SELECT \(unescaped: StoredWebhookEvent.columns) FROM webhook_events
            WHERE ordering_key = \(key) ORDER BY sequence
            """
        ).map { try $0.record(StoredWebhookEvent.self) }
    }

    package func deleteFinishedCallbacks(changedBefore before: Int64) async throws -> Int {
        try await transaction("delete finished callbacks") { [logger] connection in
            let deleted = try await connection.run(
                """
                DELETE FROM callbacks
                WHERE state IN ('connected', 'cancelled', 'expired') AND updated_at < \(before)
                RETURNING id
                """,
                logger: logger
            )
            let ids = try deleted.map { try $0.decode(String.self) }
            if !ids.isEmpty {
                try await connection.run(
                    "DELETE FROM callback_history WHERE callback_id = ANY(\(ids))",
                    logger: logger
                )
            }
            return ids.count
        }
    }

    private static func appendHistory(
        _ lines: [CallbackHistoryEntry],
        callbackID: String,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        for line in lines {
            try await connection.run(
                """
                INSERT INTO callback_history (callback_id, position, at, event, state, action, sequence, next_push_at)
                VALUES (\(callbackID),
                    (SELECT COALESCE(MAX(position), 0) + 1 FROM callback_history WHERE callback_id = \(callbackID)),
                    \(line.at), \(line.event.rawValue), \(line.state.rawValue), \(line.action),
                    \(line.sequence.map { Int32($0) }), \(line.nextPushAt))
                """,
                logger: logger
            )
        }
    }

    /// Queues pushes inside the caller's transaction, as an ingest does.
    static func insertPushes(
        _ pushes: [OutboxEntry],
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        for push in pushes {
            let columns = StoredPayload(push.payload)
            try await connection.run(
                """
                INSERT INTO outbox
                    (push_id, device_id, kind, subject_id, priority, network, topic, push_type, apns_priority,
                     apns_id, fcm_priority, collapse_id, attempts, next_attempt_at, expires_at, state, last_reason,
                     created_at, updated_at, waiting_since, now_or_never)
                VALUES (\(push.pushID), \(push.deviceID), \(push.kind.rawValue), \(push.subjectID),
                    \(Int64(push.priority)), \(push.network.rawValue), \(columns.topic), \(columns.pushType),
                    \(columns.apnsPriority.map { Int64($0) }), \(columns.apnsID), \(columns.fcmPriority),
                    \(push.collapseID), \(Int64(push.attempts)), \(push.nextAttemptAt), \(push.expiresAt),
                    \(push.state.rawValue), \(push.lastReason), \(push.createdAt), \(push.updatedAt),
                    \(push.waitingSince), \(push.nowOrNever))
                """,
                logger: logger
            )
            try await connection.run(
                "INSERT INTO outbox_payloads (push_id, payload) VALUES (\(push.pushID), \(columns.body))",
                logger: logger
            )
        }
    }
}
