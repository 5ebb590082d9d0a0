import Foundation
import GRDB
public import HeraldStore
public import Logging
import Synchronization

/// `HeraldStore` on an embedded SQLite database (WAL, one file).
///
/// Reads run concurrently on reader connections; writes are grouped into shared transactions
/// (`GroupCommit`). With `durable` (the default) SQLite syncs each transaction to disk before the
/// writers hear back (`synchronous = FULL`), so an accepted push survives a crash or a power cut.
public final class SQLiteStore: HeraldStore {
    /// How the store opens its database.
    public struct Configuration: Sendable {
        /// The database file; its directory is created if missing.
        public var path: String
        /// Sync every commit to disk (`synchronous = FULL`); otherwise only survive process
        /// crashes (`NORMAL`).
        public var durable: Bool = true
        /// Reader connections.
        public var readers: Int = 4
        /// The most writes one transaction groups.
        public var maximumGroup: Int = 512

        public init(path: String) {
            self.path = path
        }
    }

    let pool: DatabasePool
    let writer: GroupCommit
    /// The connections `readNow` uses: never the pool's (see `HotReaders`).
    let hotReaders: HotReaders
    private let logger: Logger
    /// Whether any app has a webhook: only then do push completions look for the events to write
    /// with them, so a relay without webhooks pays nothing for them. One process owns a SQLite
    /// file, and it changes only through `saveApp` and `importAll`, which set it.
    let webhooksConfigured = Atomic<Bool>(false)

    /// Opens (or creates) the database and brings its schema up to date.
    ///
    /// The database, its WAL and its shared-memory file are 0600, and a directory made for it
    /// 0700, whatever the umask: they hold conversations (sealed, but with their ids and times).
    public init(configuration: Configuration, logger: Logger) throws {
        do {
            try PrivateFiles.prepareDatabase(at: configuration.path)
        } catch {
            throw StoreError.unavailable.with(detail: "cannot open the database \(configuration.path): \(error)")
        }
        var config = GRDB.Configuration()
        config.maximumReaderCount = max(1, configuration.readers)
        config.busyMode = .timeout(10)
        let synchronous = configuration.durable ? "FULL" : "NORMAL"
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            // The writer keeps 16 MiB of pages (the outbox's recent pages stay in memory); readers
            // keep SQLite's default 2 MiB each.
            if !db.configuration.readonly {
                try db.execute(sql: "PRAGMA cache_size = -16384")
                // What is deleted (expired messages, purged chats, the clear senders once sealed)
                // is overwritten with zeros, not only unlinked: a reader of the file must not
                // find it in free pages. The cost is writing freed pages, in the janitor's batches.
                try db.execute(sql: "PRAGMA secure_delete = ON")
            }
        }
        do {
            pool = try DatabasePool(path: configuration.path, configuration: config)
            // A database a newer Herald has migrated holds what this build does not know: refuse
            // it rather than write beside it (the operator rolled back the binary, not the data).
            if try pool.read({ db in try Self.migrator.hasBeenSuperseded(db) }) {
                throw StoreError.unavailable.with(
                    detail: "the database \(configuration.path) was written by a newer Herald than this build "
                        + "(its schema has migrations this build does not know): run that version, or restore a backup "
                        + "made before the upgrade"
                )
            }
            try Self.migrator.migrate(pool)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.unavailable.with(detail: "cannot open the database \(configuration.path): \(error)")
        }
        writer = GroupCommit(pool: pool, maximumBatch: configuration.maximumGroup)
        do {
            // One per thread that can run an ingest at once: the cooperative pool has one per core.
            hotReaders = try HotReaders(
                path: configuration.path,
                count: ProcessInfo.processInfo.activeProcessorCount,
                configuration: config
            )
        } catch {
            throw StoreError.unavailable.with(detail: "cannot open the database \(configuration.path): \(error)")
        }
        self.logger = logger
        let configured = try pool.read { db in try Self.anyAppWebhook(db) }
        webhooksConfigured.store(configured, ordering: .relaxed)
    }

    /// The schema, one migration per released change.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE apps (
                        id TEXT PRIMARY KEY,
                        team_id TEXT NOT NULL,
                        content_policy TEXT NOT NULL,
                        alert_title TEXT NOT NULL,
                        alert_body TEXT NOT NULL,
                        message_ttl INTEGER NOT NULL,
                        call_ttl INTEGER NOT NULL
                    );
                    CREATE TABLE devices (
                        id TEXT PRIMARY KEY,
                        user_id TEXT NOT NULL,
                        app_id TEXT NOT NULL,
                        platform TEXT NOT NULL,
                        messaging_token TEXT UNIQUE,
                        voip_token TEXT UNIQUE,
                        key_id TEXT NOT NULL,
                        previous_key_id TEXT,
                        device_public_key BLOB NOT NULL,
                        relay_public_key BLOB NOT NULL,
                        sealed_relay_secret_key BLOB NOT NULL,
                        sealed_session_keys BLOB NOT NULL,
                        credential_hash BLOB NOT NULL,
                        token_dead_reason TEXT,
                        created_at INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL
                    );
                    CREATE INDEX devices_by_user ON devices(user_id);
                    CREATE TABLE presence (
                        device_id TEXT PRIMARY KEY REFERENCES devices(id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL,
                        conversation TEXT,
                        state TEXT NOT NULL,
                        updated_at INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL
                    );
                    CREATE TABLE messages (
                        id TEXT PRIMARY KEY,
                        user_id TEXT NOT NULL,
                        conversation TEXT NOT NULL,
                        sender_id TEXT NOT NULL,
                        sender_name TEXT NOT NULL,
                        sealed_text BLOB NOT NULL,
                        created_at INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL
                    );
                    CREATE INDEX messages_by_expiry ON messages(expires_at);
                    CREATE TABLE ingests (
                        idempotency_key TEXT PRIMARY KEY,
                        receipt BLOB NOT NULL,
                        created_at INTEGER NOT NULL
                    );
                    CREATE TABLE outbox (
                        push_id TEXT PRIMARY KEY,
                        device_id TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        subject_id TEXT NOT NULL,
                        priority INTEGER NOT NULL,
                        payload TEXT NOT NULL,
                        apns_id TEXT NOT NULL,
                        topic TEXT NOT NULL,
                        push_type TEXT NOT NULL,
                        collapse_id TEXT,
                        attempts INTEGER NOT NULL,
                        next_attempt_at INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL,
                        state TEXT NOT NULL,
                        last_reason TEXT,
                        claim_owner TEXT,
                        claim_until INTEGER,
                        created_at INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL
                    );
                    CREATE INDEX outbox_due ON outbox(state, priority DESC, created_at ASC);
                    CREATE TABLE delivery_log (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        push_id TEXT NOT NULL,
                        at INTEGER NOT NULL,
                        state TEXT NOT NULL,
                        reason TEXT
                    );
                    CREATE INDEX delivery_log_by_push ON delivery_log(push_id);
                    """
            )
        }
        migrator.registerMigration("v2: partial outbox indexes") { db in
            // Only queued and sending pushes are ever looked up by state; delivered history stays
            // out of these indexes, so a state change touches small trees.
            try db.execute(
                sql: """
                    DROP INDEX outbox_due;
                    CREATE INDEX outbox_queued ON outbox(priority DESC, created_at ASC) WHERE state = 'queued';
                    CREATE INDEX outbox_queued_due ON outbox(next_attempt_at) WHERE state = 'queued';
                    CREATE INDEX outbox_sending ON outbox(claim_until) WHERE state = 'sending';
                    """
            )
        }
        migrator.registerMigration("v3: payloads apart") { db in
            // A push's state changes twice after it is written (claimed, finished); its payload
            // never does. Kept apart, the rows that change are small and many fit a page.
            try db.execute(
                sql: """
                    CREATE TABLE outbox_payloads (push_id TEXT PRIMARY KEY, payload TEXT NOT NULL);
                    INSERT INTO outbox_payloads (push_id, payload) SELECT push_id, payload FROM outbox;
                    ALTER TABLE outbox DROP COLUMN payload;
                    CREATE INDEX outbox_finished ON outbox(updated_at)
                        WHERE state NOT IN ('queued', 'sending');
                    """
            )
        }
        migrator.registerMigration("v4: chat transcripts") { db in
            try db.execute(
                sql: """
                    CREATE TABLE transcript_events (
                        conversation TEXT NOT NULL,
                        position INTEGER NOT NULL,
                        user_id TEXT NOT NULL,
                        type TEXT NOT NULL,
                        author_id TEXT NOT NULL,
                        author_name TEXT NOT NULL,
                        from_agent INTEGER NOT NULL,
                        sealed_text BLOB NOT NULL,
                        at INTEGER NOT NULL,
                        PRIMARY KEY (conversation, position)
                    );
                    CREATE TABLE chat_disconnects (
                        device_id TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
                        conversation TEXT NOT NULL,
                        position INTEGER NOT NULL,
                        at INTEGER NOT NULL,
                        pushed INTEGER NOT NULL,
                        PRIMARY KEY (device_id, conversation)
                    );
                    """
            )
        }
        migrator.registerMigration("v5: collapse by conversation") { db in
            try db.execute(sql: "ALTER TABLE apps ADD COLUMN collapse_by_conversation INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v6: the push network in a column") { db in
            // `push_type` held `fcm` for FCM pushes, so the network was read from a string, and
            // APNs' header values were required of FCM rows. The network now has its column and
            // each network's fields their own (NULL for the other network). SQLite cannot change
            // a column's constraints in place: the table is rebuilt, its indexes with it.
            try db.execute(
                sql: """
                    CREATE TABLE outbox_v6 (
                        push_id TEXT PRIMARY KEY,
                        device_id TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        subject_id TEXT NOT NULL,
                        priority INTEGER NOT NULL,
                        network TEXT NOT NULL CHECK (network IN ('apns', 'fcm')),
                        topic TEXT NOT NULL,
                        push_type TEXT,
                        apns_priority INTEGER,
                        apns_id TEXT,
                        fcm_priority TEXT,
                        collapse_id TEXT,
                        attempts INTEGER NOT NULL,
                        next_attempt_at INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL,
                        state TEXT NOT NULL,
                        last_reason TEXT,
                        claim_owner TEXT,
                        claim_until INTEGER,
                        created_at INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL,
                        CHECK ((network = 'apns') = (push_type IS NOT NULL AND apns_priority IS NOT NULL
                            AND apns_id IS NOT NULL AND fcm_priority IS NULL))
                    );
                    INSERT INTO outbox_v6
                        SELECT push_id, device_id, kind, subject_id, priority,
                            CASE push_type WHEN 'fcm' THEN 'fcm' ELSE 'apns' END,
                            topic,
                            CASE push_type WHEN 'fcm' THEN NULL ELSE push_type END,
                            CASE push_type WHEN 'fcm' THEN NULL ELSE priority END,
                            CASE push_type WHEN 'fcm' THEN NULL ELSE apns_id END,
                            CASE push_type WHEN 'fcm' THEN 'HIGH' ELSE NULL END,
                            collapse_id, attempts, next_attempt_at, expires_at, state, last_reason, claim_owner,
                            claim_until, created_at, updated_at
                        FROM outbox;
                    DROP TABLE outbox;
                    ALTER TABLE outbox_v6 RENAME TO outbox;
                    CREATE INDEX outbox_queued ON outbox(priority DESC, created_at ASC) WHERE state = 'queued';
                    CREATE INDEX outbox_queued_due ON outbox(next_attempt_at) WHERE state = 'queued';
                    CREATE INDEX outbox_sending ON outbox(claim_until) WHERE state = 'sending';
                    CREATE INDEX outbox_finished ON outbox(updated_at) WHERE state NOT IN ('queued', 'sending');
                    """
            )
        }
        migrator.registerMigration("v7: sealed senders") { db in
            // Senders (a message's, a chat event's author) were kept in the clear. The store
            // cannot seal them (only the relay holds the master key), so the clear values move to
            // tables of their own that the relay empties at start (`clearSenders`, `sealSenders`);
            // the messages and transcript tables never hold a clear sender again, and
            // `secure_delete` zeroes the old tables' pages.
            try db.execute(
                sql: """
                    CREATE TABLE messages_v7 (
                        id TEXT PRIMARY KEY,
                        user_id TEXT NOT NULL,
                        conversation TEXT NOT NULL,
                        sealed_sender BLOB,
                        sealed_text BLOB NOT NULL,
                        created_at INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL
                    );
                    INSERT INTO messages_v7
                        SELECT id, user_id, conversation, NULL, sealed_text, created_at, expires_at FROM messages;
                    CREATE TABLE message_clear_senders (
                        message_id TEXT PRIMARY KEY,
                        sender_id TEXT NOT NULL,
                        sender_name TEXT NOT NULL,
                        created_at INTEGER NOT NULL
                    );
                    INSERT INTO message_clear_senders SELECT id, sender_id, sender_name, created_at FROM messages;
                    DROP TABLE messages;
                    ALTER TABLE messages_v7 RENAME TO messages;
                    CREATE INDEX messages_by_expiry ON messages(expires_at);
                    CREATE TABLE transcript_events_v7 (
                        conversation TEXT NOT NULL,
                        position INTEGER NOT NULL,
                        user_id TEXT NOT NULL,
                        type TEXT NOT NULL,
                        sealed_author BLOB,
                        from_agent INTEGER NOT NULL,
                        sealed_text BLOB NOT NULL,
                        at INTEGER NOT NULL,
                        PRIMARY KEY (conversation, position)
                    );
                    INSERT INTO transcript_events_v7
                        SELECT conversation, position, user_id, type, NULL, from_agent, sealed_text, at
                        FROM transcript_events;
                    CREATE TABLE transcript_clear_authors (
                        conversation TEXT NOT NULL,
                        position INTEGER NOT NULL,
                        author_id TEXT NOT NULL,
                        author_name TEXT NOT NULL,
                        at INTEGER NOT NULL,
                        PRIMARY KEY (conversation, position)
                    );
                    INSERT INTO transcript_clear_authors
                        SELECT conversation, position, author_id, author_name, at FROM transcript_events;
                    DROP TABLE transcript_events;
                    ALTER TABLE transcript_events_v7 RENAME TO transcript_events;
                    """
            )
        }
        migrator.registerMigration("v8: chat lifecycle") { db in
            // Chats known before this version are open, with their first and last event times,
            // so the idle rule ends them and retention purges them like any other.
            try db.execute(
                sql: """
                    CREATE TABLE chats (
                        conversation TEXT PRIMARY KEY,
                        user_id TEXT NOT NULL,
                        started_at INTEGER NOT NULL,
                        last_event_at INTEGER NOT NULL,
                        ended_at INTEGER
                    );
                    INSERT INTO chats (conversation, user_id, started_at, last_event_at)
                        SELECT conversation,
                            (SELECT user_id FROM transcript_events first
                                WHERE first.conversation = events.conversation ORDER BY position LIMIT 1),
                            MIN(at), MAX(at)
                        FROM transcript_events events GROUP BY conversation;
                    CREATE INDEX chats_open ON chats(last_event_at) WHERE ended_at IS NULL;
                    CREATE INDEX chats_ended ON chats(ended_at) WHERE ended_at IS NOT NULL;
                    CREATE INDEX chat_disconnects_by_conversation ON chat_disconnects(conversation);
                    """
            )
        }
        migrator.registerMigration("v9: queued pushes by network") { db in
            // While one network is down the dispatcher claims the other's pushes only: without
            // this, each such claim would read past every queued push of the network that is down
            // (20,000 in an hour-long outage) to find none.
            try db.execute(
                sql: """
                    CREATE INDEX outbox_queued_by_network ON outbox(network, priority DESC, created_at ASC)
                        WHERE state = 'queued';
                    """
            )
        }
        migrator.registerMigration("v10: live sessions and handovers") { db in
            // One node holds them all (SQLite is not shared), under the same rules as on
            // PostgreSQL, where they cross nodes.
            try db.execute(
                sql: """
                    CREATE TABLE live_sessions (
                        device_id TEXT PRIMARY KEY,
                        node_id TEXT NOT NULL,
                        session_id TEXT NOT NULL,
                        conversation TEXT,
                        expires_at INTEGER NOT NULL
                    );
                    CREATE INDEX live_sessions_by_node ON live_sessions(node_id);
                    CREATE TABLE live_handovers (
                        message_id TEXT NOT NULL,
                        device_id TEXT NOT NULL,
                        node_id TEXT NOT NULL,
                        deadline INTEGER NOT NULL,
                        taken INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (message_id, device_id)
                    );
                    CREATE INDEX live_handovers_by_node ON live_handovers(node_id) WHERE taken = 0;
                    CREATE INDEX live_handovers_by_deadline ON live_handovers(deadline);
                    """
            )
        }
        migrator.registerMigration("v11: provider tokens") { db in
            // One row per APNs key: its current provider token, sealed by the caller with a key
            // derived from the .p8 (never in the clear), and a version for compare-and-set.
            try db.execute(
                sql: """
                    CREATE TABLE provider_tokens (
                        team_id TEXT NOT NULL,
                        key_id TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        sealed_token BLOB NOT NULL,
                        issued_at INTEGER NOT NULL,
                        PRIMARY KEY (team_id, key_id)
                    );
                    """
            )
        }
        migrator.registerMigration("v12: pushes listed newest first") { db in
            // `GET /v1/pushes` pages through the outbox newest first, by device (and so by
            // user, through the user's devices) or over all of it: each order has its index, so a
            // page reads its rows instead of sorting every push kept.
            try db.execute(
                sql: """
                    CREATE INDEX outbox_by_device ON outbox(device_id, created_at, push_id);
                    CREATE INDEX outbox_by_age ON outbox(created_at, push_id);
                    """
            )
        }
        registerLaterMigrations(&migrator)
        return migrator
    }

    func read<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(work)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.unavailable.with(detail: "a read failed: \(error)")
        }
    }

    /// One SELECT on the calling thread, without hopping to a reader queue and back, and without
    /// wrapping it in a transaction (a single statement reads one snapshot anyway): for the read
    /// every ingest makes. Readers never wait for the writer (WAL); this one never waits for the
    /// pool's readers either (`HotReaders`).
    func readNow<T>(_ work: (Database) throws -> T) throws -> T {
        do {
            return try hotReaders.read(work)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.unavailable.with(detail: "a read failed: \(error)")
        }
    }

    func write<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await writer.write(work)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.unavailable.with(detail: "a write failed: \(error)")
        }
    }
}
