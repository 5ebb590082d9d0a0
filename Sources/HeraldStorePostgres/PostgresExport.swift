public import HeraldStore
public import Logging
import NIOCore
import PostgresNIO

/// A PostgreSQL store's contents for another engine (`StoreExport`): `herald store migrate`
/// from PostgreSQL back to SQLite.
///
/// The nodes must be stopped, as for SQLite's export: a node writing while the records are read
/// would leave its last writes behind. Every node names its sessions `herald:<schema>`
/// (`application_name`), and the export refuses while the server shows one on the schema. It
/// changes nothing: a schema this build did not migrate to its latest version, older or newer,
/// is refused rather than upgraded.
public final class PostgresExport: StoreExport {
    let store: PostgresStore

    private init(store: PostgresStore) {
        self.store = store
    }

    /// Connects for an export and runs `body` with it, then closes its connections (also when
    /// `body` throws). Throws `unavailable` naming the problem when the database cannot be
    /// reached, when its schema is not this build's latest (none, older or newer), and, with
    /// `requireStoppedNodes`, while a node is connected to the schema.
    public static func withOpen<T: Sendable>(
        configuration: PostgresStoreConfiguration,
        logger: Logger,
        requireStoppedNodes: Bool = true,
        _ body: (PostgresExport) async throws -> T
    ) async throws -> T {
        let status = try await PostgresStore.schemaStatus(configuration: configuration, logger: logger)
        let place = "the PostgreSQL schema \(configuration.schema) of \(configuration)"
        guard status.version != 0 else { throw StoreError.unavailable.with(detail: "\(place) holds no Herald data") }
        guard !status.isNewer else {
            throw StoreError.unavailable.with(
                detail: "\(place) was migrated by a newer Herald than this build: use that version"
            )
        }
        guard status.version == status.latest else {
            throw StoreError.unavailable.with(
                detail: "\(place) was last used by an older Herald: start this build's node on it once "
                    + "(it upgrades the schema), stop it, then migrate"
            )
        }
        var own = configuration
        own.forExport = true
        own.poolSize = 2
        return try await PostgresStore.withOpen(configuration: own, logger: logger) { store in
            if requireStoppedNodes {
                try await refuseWhileNodesRun(store, configuration: configuration, place: place)
            }
            return try await body(PostgresExport(store: store))
        }
    }

    /// Throws `unavailable` while the server shows a node's session on the schema.
    private static func refuseWhileNodesRun(
        _ store: PostgresStore,
        configuration: PostgresStoreConfiguration,
        place: String
    ) async throws(StoreError) {
        do {
            let nodes = try await store.rows(
                "look for running nodes",
                """
                SELECT COUNT(*)::BIGINT FROM pg_stat_activity
                WHERE datname = current_database() AND application_name = \(configuration.applicationName)
                """
            )
            let running = try nodes.first?.decode(Int64.self) ?? 0
            guard running == 0 else {
                throw StoreError.unavailable.with(
                    detail: "\(running) session(s) of Herald nodes are connected to \(place): stop every node first"
                )
            }
        } catch {
            throw error as? StoreError ?? StoreError.unavailable.with(detail: "look for running nodes: \(error)")
        }
    }

    /// Counted as the import counts (pushes not finished yet, undelivered webhook events).
    public func exportTally() async throws -> StoreTally { try await store.importTally() }

    /// Kinds in transfer order; each kind read in its key's order, `batchSize` rows a statement.
    public func export(batchSize: Int, into sink: @Sendable ([StoreRecord]) async throws -> Void) async throws {
        let limit = max(1, batchSize)
        var batch: [StoreRecord] = []
        func add(_ records: [StoreRecord]) async throws {
            for record in records {
                batch.append(record)
                if batch.count == limit {
                    try await sink(batch)
                    batch = []
                }
            }
        }
        func endOfKind() async throws {
            if !batch.isEmpty { try await sink(batch) }
            batch = []
        }
        try await add(try await store.apps().map(StoreRecord.app))
        try await endOfKind()
        try await page("devices d", key: "d.id", columns: DeviceRecord.columns, limit: limit) { row in
            try await add([.device(try row.record())])
        }
        try await endOfKind()
        try await page(
            "presence",
            key: "device_id",
            columns: PresenceRecord.columns,
            limit: limit
        ) { row in
            try await add([.presence(try row.record())])
        }
        try await endOfKind()
        try await page("messages", key: "id", columns: MessageRecord.columns, limit: limit) { row in
            try await add([.message(try row.record())])
        }
        try await endOfKind()
        try await page("ingests", key: "idempotency_key", columns: "idempotency_key, receipt, created_at", limit: limit)
        { row in
            var columns = Columns(row)
            let key = IdempotencyRecord(
                key: try columns.next(),
                receipt: try columns.bytes(),
                createdAt: try columns.next()
            )
            try await add([.idempotencyKey(key)])
        }
        try await endOfKind()
        try await exportPendingPushes(limit: limit, add)
        try await endOfKind()
        try await exportChats(limit: limit, add, endOfKind)
        try await exportCallbacksCallsAndEvents(limit: limit, add, endOfKind)
        try await exportKeysAuditAndHolds(limit: limit, add, endOfKind)
        // Operator accounts, their passwords' hashes only; sessions stay behind.
        try await page("operators", key: "name", columns: OperatorRecord.columns, limit: limit) { row in
            try await add([.operatorAccount(try row.record(OperatorRecord.self))])
        }
        try await endOfKind()
    }

    /// Pushes not finished yet, queued (a claim is not carried), with their returns to the queue.
    private func exportPendingPushes(limit: Int, _ add: ([StoreRecord]) async throws -> Void) async throws {
        try await page(
            "outbox o LEFT JOIN outbox_payloads p ON p.push_id = o.push_id",
            key: "o.push_id",
            columns: PostgresStore.outboxColumns,
            filter: "o.state IN ('queued', 'sending')",
            limit: limit
        ) { row in
            var entry = try PostgresStore.entry(row)
            entry.state = .queued
            let requeues = try PostgresStore.requeues(
                of: entry.pushID,
                try await store.rows(
                    "read a push's returns to the queue",
                    PostgresStore.requeuesQuery(of: entry.pushID)
                )
            )
            try await add([.push(PendingPush(entry: entry, requeues: requeues))])
        }
    }

    /// Chats, then every chat's transcript, then every chat's disconnects.
    private func exportChats(
        limit: Int,
        _ add: ([StoreRecord]) async throws -> Void,
        _ endOfKind: () async throws -> Void
    ) async throws {
        var conversations: [String] = []
        try await page("chats", key: "conversation", columns: "conversation", limit: limit) { row in
            let conversation = try row.decode(String.self)
            guard let chat = try await store.chat(conversation: conversation) else { return }
            conversations.append(conversation)
            try await add([.chat(chat)])
        }
        try await endOfKind()
        for conversation in conversations {
            try await add(
                try await store.transcript(conversation: conversation, after: 0).map(StoreRecord.transcriptEvent)
            )
        }
        try await endOfKind()
        for conversation in conversations {
            try await add(try await store.disconnects(conversation: conversation).map(StoreRecord.disconnect))
        }
        try await endOfKind()
    }

    /// Callbacks (unclaimed, with their history and key), calls (the missed-call timer's claim not
    /// carried) and webhook events not delivered yet (pending, their attempts kept).
    private func exportCallbacksCallsAndEvents(
        limit: Int,
        _ add: ([StoreRecord]) async throws -> Void,
        _ endOfKind: () async throws -> Void
    ) async throws {
        try await page("callbacks", key: "id", columns: "id, idempotency_key", limit: limit) { row in
            let (id, key) = try row.decode((String, String?).self)
            guard let callback = try await store.callback(id: id) else { return }
            let history = try await store.callbackHistory(id: id)
            try await add([.callback(CallbackTransfer(callback: callback, history: history, idempotencyKey: key))])
        }
        try await endOfKind()
        try await page("calls", key: "id", columns: "id", limit: limit) { row in
            guard let call = try await store.call(id: try row.decode(String.self)) else { return }
            try await add([.call(call)])
        }
        try await endOfKind()
        try await page(
            "webhook_events",
            key: "sequence",
            columns: StoredWebhookEvent.columns,
            filter: "state IN ('pending', 'sending')",
            limit: limit,
            numericKey: true
        ) { row in
            var stored = try row.record(StoredWebhookEvent.self)
            stored.state = .pending
            try await add([.webhookEvent(stored)])
        }
        try await endOfKind()
    }

    /// API keys (revoked ones too, each its secret's digest only), the audit log in its entries'
    /// order, and holds on messages (ended ones too: the new nodes end them).
    private func exportKeysAuditAndHolds(
        limit: Int,
        _ add: ([StoreRecord]) async throws -> Void,
        _ endOfKind: () async throws -> Void
    ) async throws {
        try await page(
            "api_keys",
            key: "id",
            columns: PostgresStore.apiKeyColumns,
            limit: limit
        ) { row in
            try await add([.apiKey(try PostgresStore.apiKey(from: row))])
        }
        try await endOfKind()
        try await page("audit_log", key: "id", columns: "id, at, actor, action, target, app_id", limit: limit) { row in
            let (id, at, actor, action, target, app) = try row.decode(
                (String, Int64, String, String, String, String?).self
            )
            try await add([
                .auditEntry(AuditEntry(id: id, at: at, actor: actor, action: action, target: target, appID: app))
            ])
        }
        try await endOfKind()
        try await page(
            "held_messages",
            key: "message_id",
            columns: "message_id, user_id, app_id, held_at, held_until",
            limit: limit
        ) { row in
            let (id, user, app, heldAt, heldUntil) = try row.decode(
                (String, String, String?, Int64, Int64).self
            )
            try await add([
                .heldMessage(HeldMessage(messageID: id, userID: user, appID: app, heldAt: heldAt, heldUntil: heldUntil))
            ])
        }
        try await endOfKind()
    }

    /// Reads `table`'s rows in `key` order, `limit` at a time (each page after the last key it
    /// saw), giving each row to `body`: `columns` then the key, last.
    private func page(
        _ table: String,
        key: String,
        columns: String,
        filter: String = "TRUE",
        limit: Int,
        numericKey: Bool = false,
        _ body: (PostgresRow) async throws -> Void
    ) async throws {
        var after: String?
        while true {
            var bindings = PostgresBindings(capacity: 1)
            var condition = filter
            if let after {
                if numericKey { bindings.append(Int64(after) ?? 0) } else { bindings.append(after) }
                condition += " AND \(key) > $1"
            }
            let sql = "SELECT \(columns), \(key)::text FROM \(table) WHERE \(condition) ORDER BY \(key) LIMIT \(limit)"
            let rows = try await store.rows("export \(table)", PostgresQuery(unsafeSQL: sql, binds: bindings))
            for row in rows { try await body(row) }
            guard rows.count == limit, let last = rows.last else { return }
            let cells = PostgresRandomAccessRow(last)
            after = try cells[cells.count - 1].decode(String.self)
        }
    }

}
