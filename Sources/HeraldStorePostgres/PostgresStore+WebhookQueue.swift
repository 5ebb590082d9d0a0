public import HeraldStore
import Logging
import PostgresNIO

extension PostgresStore {
    package func claimWebhookEvents(under lease: StoreWork.Lease) async throws -> [StoredWebhookEvent] {
        let (limit, owner, now, leaseUntil) = (lease.limit, lease.owner, lease.now, lease.until)
        guard limit > 0 else { return [] }
        // Pick and take in one statement. SKIP LOCKED: an event another node is taking or
        // finishing right now is left to it. An earlier undelivered event of the same key holds
        // the later ones back (while another node sends it, its row is still pending or sending).
        // `picked` has only `sequence`, which the returned columns do not name.
        let rows = try await rows(
            "claim webhook events",
            """
            WITH picked AS (
                SELECT e.sequence FROM webhook_events e
                WHERE e.state IN ('pending', 'sending')
                  AND ((e.state = 'pending' AND e.next_attempt_at <= \(now))
                       OR (e.state = 'sending' AND e.lease_until <= \(now)))
                  AND NOT EXISTS (
                      SELECT 1 FROM webhook_events f
                      WHERE f.ordering_key = e.ordering_key AND f.state IN ('pending', 'sending')
                        AND f.sequence < e.sequence)
                ORDER BY e.next_attempt_at, e.sequence
                LIMIT \(Int64(limit))
                FOR UPDATE SKIP LOCKED
            )
            UPDATE webhook_events w
            SET state = 'sending', owner = \(owner), lease_until = \(leaseUntil), attempts = w.attempts + 1,
                updated_at = \(now)
            FROM picked WHERE w.sequence = picked.sequence
            RETURNING \(unescaped: StoredWebhookEvent.columns)
            """
        )
        return try rows.map { try $0.record(StoredWebhookEvent.self) }.sorted {
            $0.event.createdAt < $1.event.createdAt
        }
    }

    /// `StoreChange.completeWebhookEvent`, inside the caller's transaction.
    static func completeWebhookEvent(
        _ id: String,
        _ owner: String,
        _ completion: WebhookCompletion,
        _ now: Int64,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        let (state, nextAttempt, error, deliveredAt) = completion.columns(now: now)
        let completed = try await connection.run(
            """
            UPDATE webhook_events
            SET state = \(state.rawValue), next_attempt_at = COALESCE(\(nextAttempt)::BIGINT, next_attempt_at),
                last_error = COALESCE(\(error)::TEXT, last_error), delivered_at = \(deliveredAt)::BIGINT,
                owner = NULL, lease_until = NULL, updated_at = \(now)
            WHERE id = \(id) AND owner = \(owner) AND state = 'sending'
            RETURNING id
            """,
            logger: logger
        )
        return completed.count == 1 ? .applied : .stale
    }

    public func webhookEvents(
        app: String,
        state: WebhookEventState?,
        limit: Int,
        after cursor: WebhookEventCursor?
    ) async throws -> [StoredWebhookEvent] {
        try await rows(
            "list webhook events",
            """
            SELECT \(unescaped: StoredWebhookEvent.columns) FROM webhook_events
            WHERE app_id = \(app)
              AND (\(state?.rawValue)::TEXT IS NULL OR state = \(state?.rawValue)::TEXT)
              AND (\(cursor?.createdAt)::BIGINT IS NULL
                   OR (created_at, id) > (\(cursor?.createdAt)::BIGINT, \(cursor?.id)::TEXT))
            ORDER BY created_at, id
            LIMIT \(Int64(max(0, limit)))
            """
        ).map { try $0.record(StoredWebhookEvent.self) }
    }

    public func webhookEvents(orderingKey: String, limit: Int) async throws -> [StoredWebhookEvent] {
        try await rows(
            "list a key's webhook events",
            """
            SELECT \(unescaped: StoredWebhookEvent.columns) FROM webhook_events
            WHERE ordering_key = \(orderingKey)
            ORDER BY sequence
            LIMIT \(Int64(max(0, limit)))
            """
        ).map { try $0.record(StoredWebhookEvent.self) }
    }

    public func webhookQueueDepth() async throws -> Int {
        let rows = try await rows(
            "count webhook events",
            "SELECT COUNT(*) FROM webhook_events WHERE state IN ('pending', 'sending')"
        )
        guard let row = rows.first else { return 0 }
        var columns = Columns(row)
        return Int(try columns.next(Int64.self))
    }

    package func deleteFinishedWebhookEvents(changedBefore before: Int64) async throws -> Int {
        try await rows(
            "delete finished webhook events",
            """
            DELETE FROM webhook_events WHERE state IN ('delivered', 'failed') AND updated_at < \(before)
            RETURNING sequence
            """
        ).count
    }
}
