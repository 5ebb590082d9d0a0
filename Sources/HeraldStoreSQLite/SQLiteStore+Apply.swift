import GRDB
public import HeraldStore

extension SQLiteStore: StoreWorkEngine {
    /// The store's one write: the batch is one job of the group commit, so it shares its
    /// transaction (and its fsync) with the other writers queued beside it.
    public func apply(_ changes: [StoreChange]) async throws -> [ChangeOutcome] {
        guard !changes.isEmpty else { return [] }
        if let work = try loneWork(changes) { return [try await doWork(work)] }
        let savesApp = changes.contains { if case .saveApp = $0 { true } else { false } }
        let seals = changes.contains { if case .sealSenders = $0 { true } else { false } }
        let (outcomes, sealedLast) = try await write { db in
            let outcomes = try changes.map { try Self.apply($0, db) }
            if savesApp { self.webhooksConfigured.store(try Self.anyAppWebhook(db), ordering: .relaxed) }
            return (outcomes, seals ? try !Self.clearSendersLeft(db) : false)
        }
        if sealedLast { await forgetClearSenders() }
        return outcomes
    }

    /// Runs one statement: `applied` when it changed a row, `stale` when there was none to change.
    static func changingRow(_ db: Database, sql: String, arguments: StatementArguments) throws -> ChangeOutcome {
        try db.execute(sql: sql, arguments: arguments)
        return db.changesCount > 0 ? .applied : .stale
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
        case .accept(let ingest):
            return try insert(ingest, db).change
        case .acceptCall(let ingest, let call):
            return try acceptCall(ingest, call: call, db)
        case .hold(let ingest, let until, let appID):
            return try hold(ingest, until: until, appID: appID, db)
        case .endCall(let end):
            return try endCall(end, db)
        case .reportCallRinging(let ringing):
            return try reportRinging(ringing, db)
        case .recordReceipt(let receipt, let events):
            return try record(receipt, events: events, db)
        case .scheduleCallback(let record, let history, let key):
            return try schedule(record, history: history, idempotencyKey: key, db)
        case .changeCallback(let change):
            return try Self.change(change, db)
        case .saveDisconnect(let disconnect, let events):
            try saveDisconnect(disconnect, events: events, db)
        case .markDisconnectPushed(let deviceID, let conversation):
            let sql = "UPDATE chat_disconnects SET pushed = 1 WHERE device_id = ? AND conversation = ?"
            return try changingRow(db, sql: sql, arguments: [deviceID, conversation])
        case .endChat(let conversation, let at):
            return try endChat(conversation: conversation, at: at, db)
        case .saveLiveSession(let session):
            try saveLiveSession(session, db)
        case .removeLiveSession(let deviceID, let sessionID):
            let sql = "DELETE FROM live_sessions WHERE device_id = ? AND session_id = ?"
            return try changingRow(db, sql: sql, arguments: [deviceID, sessionID])
        case .sealSenders(let sealed):
            try sealSenders(sealed, db)
        case .releaseHeld(let release, let now):
            return try Self.release(release, now: now, db)
        case .settleLiveHandover(let messageID, let deviceID):
            let sql = "DELETE FROM live_handovers WHERE message_id = ? AND device_id = ?"
            return try changingRow(db, sql: sql, arguments: [messageID, deviceID])
        case .renewLiveSessions(let nodeID, let sessionIDs, let until):
            try renewLiveSessions(nodeID: nodeID, keeping: sessionIDs, until: until, db)
        case .completeWebhookEvent(let id, let owner, let completion, let now):
            return try completeWebhookEvent(id: id, owner: owner, completion, now: now, db)
        case .removeDisconnect(let disconnect, let events):
            return try removeDisconnect(disconnect, events: events, db)
        case .armDeadlines(let deadlines):
            try insert(deadlines, db)
        case .cancelDeadlines(let pushIDs):
            try cancelDeadlines(pushIDs, db)
        case .settleDeadline(let deadline, let owner, let then):
            guard try settle(deadline, owner: owner, db) else { return .stale }
            for change in then { _ = try apply(change, db) }
        case .countUnreportedCall(let deviceID, let at):
            try countUnreportedCall(deviceID: deviceID, at: at, db)
        case .saveOperator(let account, let audit):
            return try audited(audit, db) {
                try saveOperator(account, db)
                return .applied
            }
        case .deleteOperator(let name, let audit):
            return try audited(audit, db) { try deleteOperator(name: name, db) }
        case .saveConsoleSession(let session):
            return try saveConsoleSession(session, db)
        case .deleteConsoleSession(let id):
            return try changingRow(db, sql: "DELETE FROM console_sessions WHERE id = ?", arguments: [id])
        case .deleteExpiredConsoleSessions(let before):
            try db.execute(sql: "DELETE FROM console_sessions WHERE expires_at < ?", arguments: [before])
        case .work:
            // `loneWork` let none through in a batch.
            throw StoreError.invalid.with(detail: "store work is applied in a batch of its own")
        }
        return .applied
    }
}
