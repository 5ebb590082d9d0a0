import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    public func webhookEvent(id: String) async throws -> StoredWebhookEvent? {
        try await read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT \(Self.webhookEventColumns) FROM webhook_events WHERE id = ?",
                arguments: [id]
            ).map(Self.webhookEvent(from:))
        }
    }

    /// Writes events inside the caller's transaction: every store method that makes a change a
    /// webhook reports writes its events with it through here. An id already stored is kept.
    static func insert(_ events: [WebhookEvent], _ db: Database) throws {
        for event in events {
            try db.execute(
                sql: """
                    INSERT INTO webhook_events
                        (id, app_id, type, ordering_key, data, created_at, next_attempt_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO NOTHING
                    """,
                arguments: [
                    event.id, event.appID, event.type.rawValue, event.orderingKey, event.data, event.createdAt,
                    event.createdAt, event.createdAt,
                ]
            )
        }
    }

    static let webhookEventColumns = """
        id, app_id, type, ordering_key, data, created_at, state, attempts, next_attempt_at, last_error,
        delivered_at, updated_at
        """

    /// A row of `webhookEventColumns`.
    static func webhookEvent(from row: Row) throws -> StoredWebhookEvent {
        let typeName: String = row[2]
        let stateName: String = row[6]
        guard let type = WebhookEventType(rawValue: typeName), let state = WebhookEventState(rawValue: stateName)
        else {
            throw StoreError.unavailable.with(
                detail: "a webhook event has an unknown type or state: \(typeName), \(stateName)"
            )
        }
        return StoredWebhookEvent(
            event: WebhookEvent(
                id: row[0],
                appID: row[1],
                type: type,
                orderingKey: row[3],
                data: row[4],
                createdAt: row[5]
            ),
            state: state,
            attempts: row[7],
            nextAttemptAt: row[8],
            lastError: row[9],
            deliveredAt: row[10],
            updatedAt: row[11]
        )
    }
}
