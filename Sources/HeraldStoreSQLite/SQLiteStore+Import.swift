import Foundation
import GRDB
public import HeraldStore
import Synchronization

extension SQLiteStore: StoreImport {
    /// Counted as an export counts: pushes not finished yet (queued or claimed) are pending.
    private static let tallyQueries: [(StoreRecordKind, String)] = [
        (.apps, "SELECT COUNT(*) FROM apps"),
        (.devices, "SELECT COUNT(*) FROM devices"),
        (.presence, "SELECT COUNT(*) FROM presence"),
        (.messages, "SELECT COUNT(*) FROM messages"),
        (.idempotencyKeys, "SELECT COUNT(*) FROM ingests"),
        (.pendingPushes, "SELECT COUNT(*) FROM outbox WHERE state IN ('queued', 'sending')"),
        (.chats, "SELECT COUNT(*) FROM chats"),
        (.transcriptEvents, "SELECT COUNT(*) FROM transcript_events"),
        (.disconnects, "SELECT COUNT(*) FROM chat_disconnects"),
        (.callbacks, "SELECT COUNT(*) FROM callbacks"),
        (.calls, "SELECT COUNT(*) FROM calls"),
        (.webhookEvents, "SELECT COUNT(*) FROM webhook_events WHERE state IN ('pending', 'sending')"),
        (.apiKeys, "SELECT COUNT(*) FROM api_keys"),
        (.auditEntries, "SELECT COUNT(*) FROM audit_log"),
        (.heldMessages, "SELECT COUNT(*) FROM held_messages"),
        (.operators, "SELECT COUNT(*) FROM operators"),
    ]

    private static func tally(_ db: Database) throws -> StoreTally {
        var tally = StoreTally()
        for (kind, sql) in tallyQueries {
            tally[kind] = try Int.fetchOne(db, sql: sql) ?? 0
        }
        return tally
    }

    public func importTally() async throws -> StoreTally {
        try await read { db in try Self.tally(db) }
    }

    /// SQLite's writes cannot wait for the source inside a transaction: the records are collected
    /// first, then written in one transaction (all or nothing). The whole export is held in
    /// memory meanwhile: this side of the seam is for copies into a new SQLite file and for the
    /// conformance rules, not for moving a large deployment.
    public func importAll(from source: any StoreExport, batchSize: Int) async throws -> StoreTally {
        let expected = try await source.exportTally()
        let collected = Mutex<[StoreRecord]>([])
        try await source.export(batchSize: max(1, batchSize)) { records in
            collected.withLock { $0 += records }
        }
        let records = collected.withLock { $0 }
        return try await write { db in
            let held = try Self.tally(db)
            let finished =
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT (SELECT COUNT(*) FROM outbox WHERE state NOT IN ('queued', 'sending'))
                            + (SELECT COUNT(*) FROM webhook_events WHERE state NOT IN ('pending', 'sending'))
                        """
                ) ?? 0
            guard held.total == 0, finished == 0 else {
                throw StoreError.conflict.with(
                    detail:
                        "the SQLite database already holds Herald data (\(held), finished pushes and webhook events \(finished))"
                )
            }
            for record in records { try Self.insert(record, db) }
            self.webhooksConfigured.store(try Self.anyAppWebhook(db), ordering: .relaxed)
            let written = try Self.tally(db)
            guard written == expected else {
                throw StoreError.conflict.with(
                    detail:
                        "the records written (\(written)) are not those the source holds (\(expected)): nothing was written"
                )
            }
            return written
        }
    }

    /// Writes one record as the source held it, through the statement its kind has.
    private static func insert(_ record: StoreRecord, _ db: Database) throws {
        switch record {
        case .app(let app): try insertApp(app, db, replacing: false)
        case .device(let device): try insertDevice(device, db, replacing: false)
        case .presence(let presence): try importPresence(presence, db)
        case .message(let message): try importMessage(message, db)
        case .idempotencyKey(let key): try importIdempotencyKey(key, db)
        case .push(let pending): try importPush(pending, db)
        case .chat(let chat): try importChat(chat, db)
        case .transcriptEvent(let event): try importTranscriptEvent(event, db)
        case .disconnect(let disconnect): try importDisconnect(disconnect, db)
        case .callback(let transfer): try importCallback(transfer, db)
        case .call(let call):
            // The missed-call timer unclaimed: no `timer_owner`, no `timer_lease`.
            try Self.insert(call, db)
        case .webhookEvent(let stored): try importWebhookEvent(stored, db)
        case .apiKey(let key): try importAPIKey(key, db)
        case .auditEntry(let entry): try importAuditEntry(entry, db)
        case .heldMessage(let held): try importHeldMessage(held, db)
        case .operatorAccount(let account): try saveOperator(account, db)
        }
    }

    private static func importPresence(_ presence: PresenceRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO presence (device_id, user_id, conversation, state, updated_at, expires_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                presence.deviceID, presence.userID, presence.conversation, presence.state.rawValue,
                presence.updatedAt, presence.expiresAt,
            ]
        )
    }

    private static func importMessage(_ message: MessageRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO messages
                    (id, user_id, conversation, sealed_sender, sealed_text, created_at, expires_at,
                     sealed_push_options)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                message.id, message.userID, message.conversation, Data(message.sealedSender),
                Data(message.sealedText), message.createdAt, message.expiresAt,
                message.sealedPushOptions.map { Data($0) },
            ]
        )
    }

    private static func importIdempotencyKey(_ key: IdempotencyRecord, _ db: Database) throws {
        try db.execute(
            sql: "INSERT INTO ingests (idempotency_key, receipt, created_at) VALUES (?, ?, ?)",
            arguments: [key.key, Data(key.receipt), key.createdAt]
        )
    }

    private static func importPush(_ pending: PendingPush, _ db: Database) throws {
        var push = pending.entry
        // Unclaimed, whatever the source said: no node here holds it.
        if !push.state.isFinal { push.state = .queued }
        try Self.insertPushes([push], db)
        for event in pending.requeues {
            try db.execute(
                sql: "INSERT INTO delivery_log (push_id, at, state, reason) VALUES (?, ?, ?, ?)",
                arguments: [event.pushID, event.at, event.state.rawValue, event.reason]
            )
        }
    }

    private static func importChat(_ chat: ChatRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO chats (conversation, user_id, started_at, last_event_at, ended_at)
                VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [chat.conversation, chat.userID, chat.startedAt, chat.lastEventAt, chat.endedAt]
        )
    }

    private static func importTranscriptEvent(_ event: TranscriptEvent, _ db: Database) throws {
        try insertTranscriptEvent(event, at: event.position, db)
    }

    private static func importDisconnect(_ disconnect: ChatDisconnect, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO chat_disconnects (device_id, conversation, position, at, pushed)
                VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [
                disconnect.deviceID, disconnect.conversation, disconnect.position, disconnect.at, disconnect.pushed,
            ]
        )
    }

    private static func importCallback(_ transfer: CallbackTransfer, _ db: Database) throws {
        let callback = transfer.callback
        try insertCallback(callback, idempotencyKey: transfer.idempotencyKey, db)
        for (position, line) in transfer.history.enumerated() {
            try db.execute(
                sql: """
                    INSERT INTO callback_history
                        (callback_id, position, at, event, state, action, sequence, next_push_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    callback.id, position + 1, line.at, line.event.rawValue, line.state.rawValue, line.action,
                    line.sequence, line.nextPushAt,
                ]
            )
        }
    }

    private static func importWebhookEvent(_ stored: StoredWebhookEvent, _ db: Database) throws {
        // Pending, unleased, in the order handed over (the export's order is the source's
        // `sequence`, so one key's events keep their order).
        let event = stored.event
        try db.execute(
            sql: """
                INSERT INTO webhook_events
                    (id, app_id, type, ordering_key, data, created_at, state, attempts, next_attempt_at,
                     last_error, updated_at, trace_context)
                VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?)
                """,
            arguments: [
                event.id, event.appID, event.type.rawValue, event.orderingKey, event.data, event.createdAt,
                stored.attempts, stored.nextAttemptAt, stored.lastError, stored.updatedAt, event.traceParent,
            ]
        )
    }

    private static func importAPIKey(_ key: APIKeyRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO api_keys (id, name, app_id, scopes, secret_digest, rate_per_second, burst,
                    created_at, revoked_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                key.id, key.name, key.appID, key.scopesText, Data(key.secretDigest), key.ratePerSecond,
                key.burst, key.createdAt, key.revokedAt,
            ]
        )
    }

    private static func importAuditEntry(_ entry: AuditEntry, _ db: Database) throws {
        try db.execute(
            sql: "INSERT INTO audit_log (id, at, actor, action, target, app_id) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [entry.id, entry.at, entry.actor, entry.action, entry.target, entry.appID]
        )
    }

    private static func importHeldMessage(_ held: HeldMessage, _ db: Database) throws {
        // Its message came before it, as a `message` record, sealed bytes as they were.
        try db.execute(
            sql: """
                INSERT INTO held_messages (message_id, user_id, app_id, held_at, held_until) VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [held.messageID, held.userID, held.appID, held.heldAt, held.heldUntil]
        )
    }
}
