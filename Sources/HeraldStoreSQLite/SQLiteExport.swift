import Foundation
import GRDB
public import HeraldStore

/// A SQLite store's contents for another engine (`StoreExport`), read from a database no node
/// has open.
///
/// It opens the file in SQLite's exclusive locking mode and takes the lock at once: a process
/// that has the database open (a `herald serve` still running, even idle: in WAL mode every
/// connection holds a shared lock on the file while it is open) makes the open fail, and while
/// the export holds the lock no process can open it. The database is only read: its schema is
/// not upgraded, and a file that does not exist is not created.
public final class SQLiteExport: StoreExport {
    private let queue: DatabaseQueue
    private let path: String

    /// Opens the database at `path` for export. Throws `unavailable` naming the problem when the
    /// file is missing or not a Herald database, when another process has it open, when its schema
    /// is newer than this build's, and when it still holds work only a relay can do (a schema older
    /// than this build's, or senders an older version stored in the clear, which only the relay
    /// with the master key can seal).
    public init(path: String) throws(StoreError) {
        self.path = path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw StoreError.unavailable.with(detail: "no SQLite database at \(path)")
        }
        var configuration = GRDB.Configuration()
        configuration.busyMode = .immediateError
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
        }
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            // In exclusive locking mode the lock, once taken, is kept until the connection closes.
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN EXCLUSIVE")
                try db.execute(sql: "COMMIT")
            }
            self.queue = queue
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED
        {
            throw StoreError.unavailable.with(
                detail: "the SQLite database \(path) is open in another process: stop the node using it first"
            )
        } catch {
            throw StoreError.unavailable.with(detail: "cannot open the SQLite database \(path): \(error)")
        }
        try checkSchema()
    }

    private func checkSchema() throws(StoreError) {
        let path = path
        enum Finding { case ready, notHerald, newer, older, clearSenders }
        let finding: Finding
        do {
            finding = try queue.read { db -> Finding in
                guard try db.tableExists("grdb_migrations"), try db.tableExists("outbox") else { return .notHerald }
                let migrator = SQLiteStore.migrator
                if try migrator.hasBeenSuperseded(db) { return .newer }
                if try !migrator.hasCompletedMigrations(db) { return .older }
                let clear =
                    try Int.fetchOne(
                        db,
                        sql: """
                            SELECT (SELECT COUNT(*) FROM message_clear_senders)
                                + (SELECT COUNT(*) FROM transcript_clear_authors)
                            """
                    ) ?? 0
                return clear > 0 ? .clearSenders : .ready
            }
        } catch {
            throw StoreError.unavailable.with(detail: "cannot read the SQLite database \(path): \(error)")
        }
        switch finding {
        case .ready:
            return
        case .notHerald:
            throw StoreError.unavailable.with(detail: "\(path) is not a Herald database")
        case .newer:
            throw StoreError.unavailable.with(
                detail: "the SQLite database \(path) was written by a newer Herald than this build: use that version"
            )
        case .older, .clearSenders:
            throw StoreError.unavailable.with(
                detail:
                    "the SQLite database \(path) was last used by an older Herald: start this build's "
                    + "`herald serve` on it once (it upgrades the schema and seals the senders stored in the clear), "
                    + "stop it, then migrate"
            )
        }
    }

    // MARK: What is exported

    /// One kind's rows: the query (reading after the `rowid` bound `?` in `rowid` order, at most
    /// `?` rows, with the row id as `_r`) and how a row becomes a record.
    private struct Source {
        var kind: StoreRecordKind
        var count: String
        var page: String
        var record: @Sendable (Database, Row) throws -> StoreRecord
    }

    /// Pushes not finished yet: queued, or claimed by a node (the claim is not carried).
    private static let pending = "state IN ('queued', 'sending')"

    private static let sources: [Source] = [
        Source(
            kind: .apps,
            count: "SELECT COUNT(*) FROM apps",
            page: "SELECT \(AppRecord.columns), rowid AS _r FROM apps WHERE rowid > ? ORDER BY rowid LIMIT ?",
            record: { _, row in .app(try row.record()) }
        ),
        Source(
            kind: .devices,
            count: "SELECT COUNT(*) FROM devices",
            page:
                "SELECT \(DeviceRecord.columns), d.rowid AS _r FROM devices d WHERE d.rowid > ? ORDER BY d.rowid LIMIT ?",
            record: { _, row in .device(try row.record()) }
        ),
        Source(
            kind: .presence,
            count: "SELECT COUNT(*) FROM presence",
            page: "SELECT \(PresenceRecord.columns), rowid AS _r FROM presence WHERE rowid > ? ORDER BY rowid LIMIT ?",
            record: { _, row in .presence(try row.record()) }
        ),
        Source(
            kind: .messages,
            count: "SELECT COUNT(*) FROM messages",
            // Never a NULL sender here: the export refuses a database with senders in the clear.
            page: "SELECT \(MessageRecord.columns), rowid AS _r FROM messages WHERE rowid > ? ORDER BY rowid LIMIT ?",
            record: { _, row in .message(try row.record()) }
        ),
        Source(
            kind: .idempotencyKeys,
            count: "SELECT COUNT(*) FROM ingests",
            page: "SELECT *, rowid AS _r FROM ingests WHERE rowid > ? ORDER BY rowid LIMIT ?",
            record: { _, row in
                .idempotencyKey(
                    IdempotencyRecord(
                        key: row["idempotency_key"],
                        receipt: [UInt8](row["receipt"] as Data),
                        createdAt: row["created_at"]
                    )
                )
            }
        ),
        Source(
            kind: .pendingPushes,
            count: "SELECT COUNT(*) FROM outbox WHERE \(pending)",
            page: """
                SELECT \(OutboxRow.columns), rowid AS _r FROM outbox
                WHERE \(pending) AND rowid > ? ORDER BY rowid LIMIT ?
                """,
            record: { db, row in
                var entry = try row.record(OutboxRow.self).entry(
                    body: try String.fetchOne(
                        db.cachedStatement(sql: "SELECT payload FROM outbox_payloads WHERE push_id = ?"),
                        arguments: [row[0] as String]
                    ) ?? ""
                )
                entry.state = .queued
                let requeues = try SQLiteStore.requeues(of: entry.pushID, db)
                return .push(PendingPush(entry: entry, requeues: requeues))
            }
        ),
        Source(
            kind: .chats,
            count: "SELECT COUNT(*) FROM chats",
            page: "SELECT *, rowid AS _r FROM chats WHERE rowid > ? ORDER BY rowid LIMIT ?",
            record: { _, row in
                .chat(
                    ChatRecord(
                        conversation: row["conversation"],
                        userID: row["user_id"],
                        startedAt: row["started_at"],
                        lastEventAt: row["last_event_at"],
                        endedAt: row["ended_at"]
                    )
                )
            }
        ),
        Source(
            kind: .transcriptEvents,
            count: "SELECT COUNT(*) FROM transcript_events",
            page: "SELECT *, rowid AS _r FROM transcript_events WHERE rowid > ? ORDER BY rowid LIMIT ?",
            record: { _, row in
                .transcriptEvent(
                    TranscriptEvent(
                        conversation: row["conversation"],
                        position: row["position"],
                        userID: row["user_id"],
                        type: row["type"],
                        sealedAuthor: (row["sealed_author"] as Data?).map { [UInt8]($0) } ?? [],
                        fromAgent: row["from_agent"],
                        sealedText: [UInt8](row["sealed_text"] as Data),
                        at: row["at"]
                    )
                )
            }
        ),
        Source(
            kind: .disconnects,
            count: "SELECT COUNT(*) FROM chat_disconnects",
            page: "SELECT *, rowid AS _r FROM chat_disconnects WHERE rowid > ? ORDER BY rowid LIMIT ?",
            record: { _, row in
                .disconnect(
                    ChatDisconnect(
                        deviceID: row["device_id"],
                        conversation: row["conversation"],
                        position: row["position"],
                        at: row["at"],
                        pushed: row["pushed"]
                    )
                )
            }
        ),
        Source(
            kind: .callbacks,
            count: "SELECT COUNT(*) FROM callbacks",
            page: """
                SELECT \(CallbackRecord.columns), idempotency_key, rowid AS _r FROM callbacks
                WHERE rowid > ? ORDER BY rowid LIMIT ?
                """,
            record: { db, row in
                // Read without the claim (`owner`, `lease_until`): handed over unclaimed.
                let callback = try row.record(CallbackRecord.self)
                let history = try SQLiteStore.callbackHistory(id: callback.id, db)
                return .callback(
                    CallbackTransfer(callback: callback, history: history, idempotencyKey: row["idempotency_key"])
                )
            }
        ),
        Source(
            kind: .calls,
            count: "SELECT COUNT(*) FROM calls",
            page: "SELECT id, rowid AS _r FROM calls WHERE rowid > ? ORDER BY rowid LIMIT ?",
            record: { db, row in
                // The missed-call timer's claim (`timer_owner`, `timer_lease`) is not read.
                let id: String = row["id"]
                guard let call = try SQLiteStore.call(id: id, db) else {
                    throw StoreError.corrupt.with(detail: "call \(id) vanished while it was exported")
                }
                return .call(call)
            }
        ),
        Source(
            kind: .webhookEvents,
            count: "SELECT COUNT(*) FROM webhook_events WHERE state IN ('pending', 'sending')",
            // `sequence` is the rowid: events go in the order they were written, which is the
            // order a receiver gets one key's events in.
            page: """
                SELECT \(StoredWebhookEvent.columns), sequence AS _r FROM webhook_events
                WHERE state IN ('pending', 'sending') AND sequence > ? ORDER BY sequence LIMIT ?
                """,
            record: { _, row in
                var stored = try row.record(StoredWebhookEvent.self)
                stored.state = .pending
                return .webhookEvent(stored)
            }
        ),
        Source(
            kind: .apiKeys,
            count: "SELECT COUNT(*) FROM api_keys",
            page: "SELECT *, rowid AS _r FROM api_keys WHERE rowid > ? ORDER BY rowid LIMIT ?",
            record: { _, row in
                .apiKey(
                    APIKeyRecord(
                        id: row["id"],
                        name: row["name"],
                        appID: row["app_id"],
                        scopes: APIKeyRecord.scopes(from: row["scopes"]),
                        // The secret's digest: the secret itself was never stored.
                        secretDigest: [UInt8](row["secret_digest"] as Data),
                        ratePerSecond: row["rate_per_second"],
                        burst: row["burst"],
                        createdAt: row["created_at"],
                        revokedAt: row["revoked_at"]
                    )
                )
            }
        ),
        Source(
            kind: .auditEntries,
            count: "SELECT COUNT(*) FROM audit_log",
            page: "SELECT *, rowid AS _r FROM audit_log WHERE rowid > ? ORDER BY rowid LIMIT ?",
            record: { _, row in
                .auditEntry(
                    AuditEntry(
                        id: row["id"],
                        at: row["at"],
                        actor: row["actor"],
                        action: row["action"],
                        target: row["target"],
                        appID: row["app_id"]
                    )
                )
            }
        ),
        Source(
            kind: .heldMessages,
            count: "SELECT COUNT(*) FROM held_messages",
            // Ended holds too (`endHolds` has not run on them yet): the new nodes end them.
            page: "SELECT *, rowid AS _r FROM held_messages WHERE rowid > ? ORDER BY rowid LIMIT ?",
            record: { _, row in
                .heldMessage(
                    HeldMessage(
                        messageID: row["message_id"],
                        userID: row["user_id"],
                        appID: row["app_id"],
                        heldAt: row["held_at"],
                        heldUntil: row["held_until"]
                    )
                )
            }
        ),
        Source(
            kind: .operators,
            count: "SELECT COUNT(*) FROM operators",
            page: "SELECT \(OperatorRecord.columns), rowid AS _r FROM operators WHERE rowid > ? ORDER BY rowid LIMIT ?",
            record: { _, row in .operatorAccount(try row.record(OperatorRecord.self)) }
        ),
    ]

    public func exportTally() async throws -> StoreTally {
        try read { db in
            var tally = StoreTally()
            for source in Self.sources {
                tally[source.kind] = try Int.fetchOne(db, sql: source.count) ?? 0
            }
            return tally
        }
    }

    public func export(batchSize: Int, into sink: @Sendable ([StoreRecord]) async throws -> Void) async throws {
        let limit = max(1, batchSize)
        for source in Self.sources {
            var after: Int64 = 0
            while true {
                let bound = after
                let (records, last) = try read { db -> ([StoreRecord], Int64?) in
                    var last: Int64?
                    let records = try Row.fetchAll(db, sql: source.page, arguments: [bound, limit]).map { row in
                        last = row["_r"]
                        return try source.record(db, row)
                    }
                    return (records, last)
                }
                if !records.isEmpty { try await sink(records) }
                guard let last, records.count == limit else { break }
                after = last
            }
        }
    }

    /// Reads on the one connection, which holds the database's lock throughout.
    private func read<T>(_ work: (Database) throws -> T) throws -> T {
        do {
            return try queue.read(work)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.unavailable.with(detail: "cannot read the SQLite database \(path): \(error)")
        }
    }
}
