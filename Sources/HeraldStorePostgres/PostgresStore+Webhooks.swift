public import HeraldStore
import Logging
import PostgresNIO

extension PostgresStore {
    public func webhookEvent(id: String) async throws -> StoredWebhookEvent? {
        try await rows(
            "read a webhook event",
            "SELECT \(unescaped: StoredWebhookEvent.columns) FROM webhook_events WHERE id = \(id)"
        ).first.map { try $0.record(StoredWebhookEvent.self) }
    }

    /// Writes events inside the caller's transaction: every store method that makes a change a
    /// webhook reports writes its events with it through here. An id already stored is kept.
    static func insert(_ events: [WebhookEvent], on connection: PostgresConnection, logger: Logger) async throws {
        for event in events {
            try await connection.run(
                """
                INSERT INTO webhook_events
                    (id, app_id, type, ordering_key, data, created_at, next_attempt_at, updated_at, trace_context)
                VALUES (\(event.id), \(event.appID), \(event.type.rawValue), \(event.orderingKey), \(event.data),
                    \(event.createdAt), \(event.createdAt), \(event.createdAt), \(event.traceParent))
                ON CONFLICT (id) DO NOTHING
                """,
                logger: logger
            )
        }
    }
}
