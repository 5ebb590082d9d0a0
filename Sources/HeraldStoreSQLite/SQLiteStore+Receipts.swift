import GRDB
public import HeraldStore

/// The phones' receipts (docs/receipts.md): one row per push and stage.
extension SQLiteStore {
    /// `StoreChange.recordReceipt`, inside the caller's transaction.
    static func record(_ receipt: PushReceipt, events: [WebhookEvent], _ db: Database) throws -> ChangeOutcome {
        guard
            try Bool.fetchOne(db, sql: "SELECT 1 FROM outbox WHERE push_id = ?", arguments: [receipt.pushID]) != nil
        else { return .stale }
        try db.execute(
            sql: """
                INSERT INTO push_receipts (push_id, stage, device_at, received_at, failure) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (push_id, stage) DO NOTHING
                """,
            arguments: [
                receipt.pushID, receipt.stage.rawValue, receipt.deviceTime, receipt.receivedAt,
                receipt.failure?.rawValue,
            ]
        )
        guard db.changesCount > 0 else { return .duplicate }
        try insert(events, db)
        return .applied
    }

    public func receipts(pushID: String) async throws -> [PushReceipt] {
        try await read { db in try Self.receipts(pushID: pushID, db) }
    }

    /// A push's receipts in the order of their stages; a row this build cannot read is skipped.
    static func receipts(pushID: String, _ db: Database) throws -> [PushReceipt] {
        try Row.fetchAll(
            db,
            sql: "SELECT stage, device_at, received_at, failure FROM push_receipts WHERE push_id = ?",
            arguments: [pushID]
        ).compactMap { row -> PushReceipt? in
            guard let stage = ReceiptStage(rawValue: row[0]) else { return nil }
            let failure = (row[3] as String?).flatMap(ReceiptFailure.init(rawValue:))
            return PushReceipt(pushID: pushID, stage: stage, deviceTime: row[1], receivedAt: row[2], failure: failure)
        }.sorted { $0.stage < $1.stage }
    }
}
