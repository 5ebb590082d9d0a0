public import HeraldStore
import Logging
import PostgresNIO

/// The phones' receipts, as on SQLite: one row per push and stage.
extension PostgresStore {
    /// `StoreChange.recordReceipt`, inside the caller's transaction.
    static func record(
        _ receipt: PushReceipt,
        events: [WebhookEvent],
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        guard
            try await connection.run("SELECT 1 FROM outbox WHERE push_id = \(receipt.pushID)", logger: logger)
                .first != nil
        else { return .stale }
        let inserted = try await connection.run(
            """
            INSERT INTO push_receipts (push_id, stage, device_at, received_at, failure)
            VALUES (\(receipt.pushID), \(receipt.stage.rawValue), \(receipt.deviceTime), \(receipt.receivedAt),
                \(receipt.failure?.rawValue))
            ON CONFLICT (push_id, stage) DO NOTHING
            RETURNING 1
            """,
            logger: logger
        )
        guard inserted.first != nil else { return .duplicate }
        try await insert(events, on: connection, logger: logger)
        return .applied
    }

    public func receipts(pushID: String) async throws -> [PushReceipt] {
        try await transaction("read a push's receipts") { [logger] connection in
            try await Self.receipts(pushID: pushID, on: connection, logger: logger)
        }
    }

    /// A push's receipts in the order of their stages; a row this build cannot read is skipped.
    static func receipts(
        pushID: String,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws
        -> [PushReceipt]
    {
        var receipts: [PushReceipt] = []
        for row in try await connection.run(
            "SELECT stage, device_at, received_at, failure FROM push_receipts WHERE push_id = \(pushID)",
            logger: logger
        ) {
            let (stage, deviceTime, receivedAt, failure) = try row.decode((String, Int64, Int64, String?).self)
            guard let stage = ReceiptStage(rawValue: stage) else { continue }
            receipts.append(
                PushReceipt(
                    pushID: pushID,
                    stage: stage,
                    deviceTime: deviceTime,
                    receivedAt: receivedAt,
                    failure: failure.flatMap(ReceiptFailure.init(rawValue:))
                )
            )
        }
        return receipts.sorted { $0.stage < $1.stage }
    }
}
