import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    public func webhookEvent(id: String) async throws -> StoredWebhookEvent? {
        try await readRecord("SELECT \(StoredWebhookEvent.columns) FROM webhook_events WHERE id = ?", [id])
    }

    /// Writes events inside the caller's transaction: every store method that makes a change a
    /// webhook reports writes its events with it through here. An id already stored is kept.
    static func insert(_ events: [WebhookEvent], _ db: Database) throws {
        for event in events {
            try db.execute(
                sql: """
                    INSERT INTO webhook_events
                        (id, app_id, type, ordering_key, data, created_at, next_attempt_at, updated_at, trace_context)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO NOTHING
                    """,
                arguments: [
                    event.id, event.appID, event.type.rawValue, event.orderingKey, event.data, event.createdAt,
                    event.createdAt, event.createdAt, event.traceParent,
                ]
            )
        }
    }
}
