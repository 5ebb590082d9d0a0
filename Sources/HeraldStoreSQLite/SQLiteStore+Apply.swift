import GRDB
public import HeraldStore

extension SQLiteStore {
    /// The store's one write: the batch is one job of the group commit, so it shares its
    /// transaction (and its fsync) with the other writers queued beside it.
    public func apply(_ changes: [StoreChange]) async throws -> [ChangeOutcome] {
        guard !changes.isEmpty else { return [] }
        let savesApp = changes.contains { if case .saveApp = $0 { true } else { false } }
        return try await write { db in
            let outcomes = try changes.map { try Self.apply($0, db) }
            if savesApp { self.webhooksConfigured.store(try Self.anyAppWebhook(db), ordering: .relaxed) }
            return outcomes
        }
    }

    /// A change with the audit entry that records it, written only when the change is.
    private static func audited(
        _ entry: AuditEntry?,
        _ db: Database,
        _ change: () throws -> ChangeOutcome
    ) throws -> ChangeOutcome {
        let outcome = try change()
        if outcome == .applied, let entry { try appendAudit(entry, db) }
        return outcome
    }

    /// One change, inside the caller's transaction.
    private static func apply(_ change: StoreChange, _ db: Database) throws -> ChangeOutcome {
        switch change {
        case .saveApp(let app):
            try saveApp(app, db)
        case .saveDevice(let device):
            try saveDevice(device, db)
        case .updateTokens(let update):
            return try updateTokens(update, db)
        case .deleteDevice(let id):
            return try deleteDevice(id: id, db)
        case .savePresence(let presence):
            try savePresence(presence, db)
        case .setNotificationPermission(let report):
            return try setNotificationPermission(report, db)
        case .enqueueWebhookEvents(let events):
            try insert(events, db)
        case .insertAPIKey(let key, let audit):
            return try audited(audit, db) { try insertAPIKey(key, db) }
        case .revokeAPIKey(let id, let at, let audit):
            return try audited(audit, db) { try revokeAPIKey(id: id, at: at, db) }
        case .appendAudit(let entry):
            try appendAudit(entry, db)
        }
        return .applied
    }
}
