public import HeraldStore
import Logging
import PostgresNIO

extension PostgresStore {
    public func webhookEvent(id: String) async throws -> StoredWebhookEvent? {
        try await rows(
            "read a webhook event",
            "SELECT \(unescaped: Self.webhookEventColumns) FROM webhook_events WHERE id = \(id)"
        ).first.map(Self.webhookEvent(from:))
    }

    /// Writes events inside the caller's transaction: every store method that makes a change a
    /// webhook reports writes its events with it through here. An id already stored is kept.
    static func insert(_ events: [WebhookEvent], on connection: PostgresConnection, logger: Logger) async throws {
        for event in events {
            try await connection.run(
                """
                INSERT INTO webhook_events
                    (id, app_id, type, ordering_key, data, created_at, next_attempt_at, updated_at)
                VALUES (\(event.id), \(event.appID), \(event.type.rawValue), \(event.orderingKey), \(event.data),
                    \(event.createdAt), \(event.createdAt), \(event.createdAt))
                ON CONFLICT (id) DO NOTHING
                """,
                logger: logger
            )
        }
    }

    static let webhookEventColumns = """
        id, app_id, type, ordering_key, data, created_at, state, attempts, next_attempt_at, last_error,
        delivered_at, updated_at
        """

    /// A row of `webhookEventColumns`.
    static func webhookEvent(from row: PostgresRow) throws -> StoredWebhookEvent {
        var columns = Columns(row)
        let id: String = try columns.next()
        let appID: String = try columns.next()
        let typeName: String = try columns.next()
        let orderingKey: String = try columns.next()
        let data: String = try columns.next()
        let createdAt: Int64 = try columns.next()
        let stateName: String = try columns.next()
        guard let type = WebhookEventType(rawValue: typeName), let state = WebhookEventState(rawValue: stateName)
        else {
            throw StoreError.unavailable.with(
                detail: "a webhook event has an unknown type or state: \(typeName), \(stateName)"
            )
        }
        return StoredWebhookEvent(
            event: WebhookEvent(
                id: id,
                appID: appID,
                type: type,
                orderingKey: orderingKey,
                data: data,
                createdAt: createdAt
            ),
            state: state,
            attempts: Int(try columns.next(Int32.self)),
            nextAttemptAt: try columns.next(),
            lastError: try columns.next(),
            deliveredAt: try columns.next(),
            updatedAt: try columns.next()
        )
    }
}
