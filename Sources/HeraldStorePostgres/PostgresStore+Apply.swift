public import HeraldStore
import PostgresNIO

extension PostgresStore {
    /// The store's one write: the batch in one transaction on one connection, run again from the
    /// start when it lost a race the database detected (see `transaction`).
    public func apply(_ changes: [StoreChange]) async throws -> [ChangeOutcome] {
        guard !changes.isEmpty else { return [] }
        return try await transaction("apply \(changes.count) change(s)") { [logger] connection in
            var outcomes: [ChangeOutcome] = []
            outcomes.reserveCapacity(changes.count)
            for change in changes {
                outcomes.append(try await Self.apply(change, on: connection, logger: logger))
            }
            return outcomes
        }
    }

    /// One change, inside the caller's transaction.
    private static func apply(
        _ change: StoreChange,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        switch change {
        case .saveApp(let app):
            try await saveApp(app, on: connection, logger: logger)
        case .saveDevice(let device):
            try await saveDevice(device, on: connection, logger: logger)
        case .updateTokens(let update):
            return try await updateTokens(update, on: connection, logger: logger)
        case .deleteDevice(let id):
            return try await deleteDevice(id: id, on: connection, logger: logger)
        case .savePresence(let presence):
            try await savePresence(presence, on: connection, logger: logger)
        case .setNotificationPermission(let report):
            return try await setNotificationPermission(report, on: connection, logger: logger)
        case .enqueueWebhookEvents(let events):
            try await insert(events, on: connection, logger: logger)
        case .insertAPIKey(let key, let audit):
            let outcome = try await insertAPIKey(key, on: connection, logger: logger)
            if outcome == .applied, let audit { try await appendAudit(audit, on: connection, logger: logger) }
            return outcome
        case .revokeAPIKey(let id, let at, let audit):
            let outcome = try await revokeAPIKey(id: id, at: at, on: connection, logger: logger)
            if outcome == .applied, let audit { try await appendAudit(audit, on: connection, logger: logger) }
            return outcome
        case .appendAudit(let entry):
            try await appendAudit(entry, on: connection, logger: logger)
        }
        return .applied
    }
}
