import GRDB

extension SQLiteStore {
    /// The migrations after v12, in order (`migrator` registers the earlier ones): a migration is
    /// never edited once released, only added at the end.
    static func registerLaterMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v13: webhook events") { db in
            // The durable queue of events for the apps' webhooks. `sequence` orders the events of
            // one ordering key (a call, a callback, a conversation, a push): a sender takes only
            // the first undelivered event of a key, so a receiver sees a call ring before it was
            // answered. `data` holds ids and states only, never content.
            try db.execute(
                sql: """
                    CREATE TABLE webhook_events (
                        sequence INTEGER PRIMARY KEY AUTOINCREMENT,
                        id TEXT NOT NULL UNIQUE,
                        app_id TEXT NOT NULL,
                        type TEXT NOT NULL,
                        ordering_key TEXT NOT NULL,
                        data TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        state TEXT NOT NULL DEFAULT 'pending',
                        attempts INTEGER NOT NULL DEFAULT 0,
                        next_attempt_at INTEGER NOT NULL,
                        owner TEXT,
                        lease_until INTEGER,
                        last_error TEXT,
                        delivered_at INTEGER,
                        updated_at INTEGER NOT NULL
                    );
                    CREATE INDEX webhook_events_by_key ON webhook_events(ordering_key, sequence)
                        WHERE state IN ('pending', 'sending');
                    CREATE INDEX webhook_events_due ON webhook_events(next_attempt_at)
                        WHERE state IN ('pending', 'sending');
                    CREATE INDEX webhook_events_by_app ON webhook_events(app_id, created_at, id);
                    """
            )
        }
        migrator.registerMigration("v14: app webhooks") { db in
            // An app's webhook: its url, and its signing secret sealed with the master key.
            try db.execute(
                sql: """
                    ALTER TABLE apps ADD COLUMN webhook_url TEXT;
                    ALTER TABLE apps ADD COLUMN webhook_secret BLOB;
                    """
            )
        }
        migrator.registerMigration("v15: calls") { db in
            // A call's state (a compare-and-set from 'ringing'), its devices' reports, the lease of
            // the node ending it as missed, and the stops handed to the node holding a device's
            // live channel. The caller is sealed at rest.
            try db.execute(
                sql: """
                    CREATE TABLE calls (
                        id TEXT PRIMARY KEY,
                        app_id TEXT NOT NULL,
                        user_id TEXT NOT NULL,
                        media TEXT NOT NULL,
                        sealed_caller BLOB NOT NULL,
                        state TEXT NOT NULL DEFAULT 'ringing',
                        device_id TEXT,
                        reason TEXT,
                        created_at INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL,
                        ringing_at INTEGER,
                        ended_at INTEGER,
                        updated_at INTEGER NOT NULL,
                        timer_owner TEXT,
                        timer_lease INTEGER
                    );
                    CREATE INDEX calls_due ON calls(expires_at) WHERE state = 'ringing';
                    CREATE TABLE call_devices (
                        call_id TEXT NOT NULL,
                        device_id TEXT NOT NULL,
                        report TEXT NOT NULL DEFAULT 'pushed',
                        reported_at INTEGER,
                        PRIMARY KEY (call_id, device_id)
                    );
                    CREATE TABLE call_stops (
                        call_id TEXT NOT NULL,
                        device_id TEXT NOT NULL,
                        node_id TEXT NOT NULL,
                        reason TEXT NOT NULL,
                        PRIMARY KEY (call_id, device_id)
                    );
                    CREATE INDEX call_stops_by_node ON call_stops(node_id);
                    """
            )
        }
        migrator.registerMigration("v16: fleets: apps' APNs keys and FCM accounts, devices' environment") { db in
            // A fleet's apps name the key (team) and account they push with; an iOS device keeps
            // the APNs environment its tokens belong to. NULL: the default key, account and
            // environment (what every app and device had before).
            try db.execute(
                sql: """
                    ALTER TABLE apps ADD COLUMN apns_key TEXT;
                    ALTER TABLE apps ADD COLUMN fcm_account TEXT;
                    ALTER TABLE apps ADD COLUMN apns_environment TEXT;
                    ALTER TABLE devices ADD COLUMN apns_environment TEXT;
                    """
            )
        }
        migrator.registerMigration("v17: callbacks") { db in
            // Callbacks (seed 002): the dialog and the service id sealed by the relay; `version`
            // moves with every change and claim (the compare-and-set of an answer); `owner` and
            // `lease_until` hold a claim of a due callback while its push is queued.
            try db.execute(
                sql: """
                    CREATE TABLE callbacks (
                        id TEXT PRIMARY KEY,
                        app_id TEXT NOT NULL,
                        user_id TEXT NOT NULL,
                        state TEXT NOT NULL,
                        sealed_dialog BLOB NOT NULL,
                        due_at INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL,
                        pushes INTEGER NOT NULL DEFAULT 0,
                        version INTEGER NOT NULL DEFAULT 0,
                        last_action TEXT,
                        owner TEXT,
                        lease_until INTEGER,
                        idempotency_key TEXT UNIQUE,
                        created_at INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL
                    );
                    CREATE INDEX callbacks_due ON callbacks(due_at) WHERE state = 'scheduled';
                    CREATE INDEX callbacks_expiring ON callbacks(expires_at) WHERE state IN ('scheduled', 'pushed');
                    CREATE TABLE callback_history (
                        callback_id TEXT NOT NULL,
                        position INTEGER NOT NULL,
                        at INTEGER NOT NULL,
                        event TEXT NOT NULL,
                        state TEXT NOT NULL,
                        action TEXT,
                        sequence INTEGER,
                        next_push_at INTEGER,
                        PRIMARY KEY (callback_id, position)
                    );
                    """
            )
        }
        migrator.registerMigration("v18: push options: an app's presence policy and message priority") { db in
            try db.execute(sql: "ALTER TABLE apps ADD COLUMN presence_policy TEXT NOT NULL DEFAULT 'per_device'")
            try db.execute(sql: "ALTER TABLE apps ADD COLUMN message_priority INTEGER NOT NULL DEFAULT 5")
        }
        migrator.registerMigration("v19: queue order and now or never") { db in
            // An app's queue order; a push's customer wait (NULL: ordered by its time in the
            // queue) and its "now or never" flag. The queued indexes order by the claim's own
            // expression, so the claim still stops at its limit whatever the backlog.
            try db.execute(
                sql: """
                    ALTER TABLE apps ADD COLUMN queue_order TEXT NOT NULL DEFAULT 'queue_time';
                    ALTER TABLE outbox ADD COLUMN waiting_since INTEGER;
                    ALTER TABLE outbox ADD COLUMN now_or_never INTEGER NOT NULL DEFAULT 0;
                    DROP INDEX outbox_queued;
                    CREATE INDEX outbox_queued ON outbox(priority DESC, COALESCE(waiting_since, created_at) ASC)
                        WHERE state = 'queued';
                    DROP INDEX outbox_queued_by_network;
                    CREATE INDEX outbox_queued_by_network
                        ON outbox(network, priority DESC, COALESCE(waiting_since, created_at) ASC)
                        WHERE state = 'queued';
                    """
            )
        }
        migrator.registerMigration("v20: notification permission: whether a device may show notifications") { db in
            // Every device stored before could show them as far as the relay knew: `granted`.
            try db.execute(
                sql: """
                    ALTER TABLE devices ADD COLUMN notification_permission TEXT NOT NULL DEFAULT 'granted';
                    ALTER TABLE devices ADD COLUMN notification_permission_at INTEGER;
                    """
            )
        }
        migrator.registerMigration("v21: a message's push options, sealed, for a push made after a live delivery") {
            db in
            // Sealed by the relay with the master key (the title and data are private); NULL for
            // a message that went to no live channel or named no options.
            try db.execute(sql: "ALTER TABLE messages ADD COLUMN sealed_push_options BLOB")
        }
        migrator.registerMigration("v22: API keys and the audit log") { db in
            // A key's secret is never kept, only its BLAKE2b-256 digest; `scopes` are names,
            // comma-separated. The audit log names who changed what, never a secret.
            try db.execute(
                sql: """
                    CREATE TABLE api_keys (
                        id TEXT PRIMARY KEY,
                        name TEXT NOT NULL,
                        app_id TEXT,
                        scopes TEXT NOT NULL,
                        secret_digest BLOB NOT NULL,
                        rate_per_second REAL,
                        burst INTEGER,
                        created_at INTEGER NOT NULL,
                        revoked_at INTEGER
                    );
                    CREATE TABLE audit_log (
                        id TEXT PRIMARY KEY,
                        at INTEGER NOT NULL,
                        actor TEXT NOT NULL,
                        action TEXT NOT NULL,
                        target TEXT NOT NULL,
                        app_id TEXT
                    );
                    """
            )
        }
        migrator.registerMigration("v23: messages held for a user without a device, and each app's policy for them") {
            db in
            // A held message is a row of `messages` (sealed as every message) and one here until
            // it is released into pushes or its hold ends; `app_id` NULL: for any app's device. An
            // app's NULLs take the relay's default.
            try db.execute(
                sql: """
                    CREATE TABLE held_messages (
                        message_id TEXT PRIMARY KEY,
                        user_id TEXT NOT NULL,
                        app_id TEXT,
                        held_at INTEGER NOT NULL,
                        held_until INTEGER NOT NULL
                    );
                    CREATE INDEX held_messages_by_user ON held_messages(user_id, held_at);
                    CREATE INDEX held_messages_by_end ON held_messages(held_until);
                    ALTER TABLE apps ADD COLUMN undeliverable TEXT;
                    ALTER TABLE apps ADD COLUMN hold_for INTEGER;
                    """
            )
        }
        migrator.registerMigration("v24: a callback's pushes by callback and push number") { db in
            // A callback's push is now named `<callback id>#<push number>` (it was the callback
            // id): its delivery writes `callback.pushed`, with the count of that push's devices,
            // read through this index. Pushes queued before have no `#`: their event was written
            // when they were queued, and their delivery writes none.
            try db.execute(
                sql: "CREATE INDEX outbox_callback_pushes ON outbox(subject_id) WHERE kind = 'callback'"
            )
        }
        migrator.registerMigration("v25: receipts from the phones") { db in
            // One row per push and stage the phone reported (docs/receipts.md); the stage is the
            // key's second half, so a receipt sent again finds its row and changes nothing.
            try db.execute(
                sql: """
                    CREATE TABLE push_receipts (
                        push_id TEXT NOT NULL,
                        stage TEXT NOT NULL,
                        device_at INTEGER NOT NULL,
                        received_at INTEGER NOT NULL,
                        failure TEXT,
                        PRIMARY KEY (push_id, stage)
                    ) WITHOUT ROWID
                    """
            )
        }
        migrator.registerMigration("v26: push deadlines and unreported calls") { db in
            // A push's deadline (docs/receipts.md): one row per push and action until a receipt
            // cancels it or the node that claimed it when due settles it. An app's rules are one
            // JSON column; a device's VoIP pushes left unreported to CallKit, one counter row.
            try db.execute(
                sql: """
                    CREATE TABLE push_deadlines (
                        push_id TEXT NOT NULL,
                        action TEXT NOT NULL,
                        device_id TEXT NOT NULL,
                        due_at INTEGER NOT NULL,
                        owner TEXT,
                        lease_until INTEGER,
                        PRIMARY KEY (push_id, action)
                    ) WITHOUT ROWID;
                    CREATE INDEX push_deadlines_due ON push_deadlines(due_at);
                    CREATE TABLE unreported_calls (
                        device_id TEXT PRIMARY KEY,
                        count INTEGER NOT NULL,
                        last_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    ALTER TABLE apps ADD COLUMN deadlines TEXT;
                    """
            )
        }
        migrator.registerMigration("v27: a push's trace context") { db in
            // The W3C traceparent of the request that made a push, and of a webhook event made
            // from a push, written only while tracing is on (docs/tracing.md); NULL otherwise,
            // and for every row written before.
            try db.execute(
                sql: """
                    ALTER TABLE outbox ADD COLUMN trace_context TEXT;
                    ALTER TABLE webhook_events ADD COLUMN trace_context TEXT;
                    """
            )
        }
        migrator.registerMigration("v28: a browser's Web Push subscription keys") { db in
            // A browser's endpoint is its messaging token; its keys (p256dh ‖ auth, 81 bytes)
            // change with it and are read by the claim, so a push is encrypted for the
            // subscription the device has when it is sent.
            try db.execute(sql: "ALTER TABLE devices ADD COLUMN web_push_keys BLOB")
            // The outbox takes the two new networks. SQLite cannot change a CHECK in place, and
            // rebuilding the outbox would copy every push: widening a CHECK changes nothing on
            // disk, so the table's stored definition is edited instead, the procedure SQLite
            // documents for it (sqlite.org/lang_altertable.html, "Making Other Kinds Of Table
            // Schema Changes"), in the migration's transaction.
            let version = try Int.fetchOne(db, sql: "PRAGMA schema_version") ?? 0
            try db.execute(sql: "PRAGMA writable_schema = ON")
            try db.execute(
                sql: """
                    UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name = 'outbox'
                    """,
                arguments: [
                    "CHECK (network IN ('apns', 'fcm'))", "CHECK (network IN ('apns', 'fcm', 'webpush', 'hms'))",
                ]
            )
            try db.execute(sql: "PRAGMA schema_version = \(version + 1)")
            try db.execute(sql: "PRAGMA writable_schema = OFF")
        }
        migrator.registerMigration("v29: the console's operators and sessions, pushes by subject") { db in
            // An operator's password is kept as its Argon2id encoded hash, a session under the
            // digest of its cookie's secret: neither secret is stored. The console finds a
            // message's, a call's or a callback push's pushes by their subject; that index also
            // serves the look-ups of a callback's pushes by subject, which had a partial index of
            // their own (v24): dropped, so a push's insert updates one index fewer. A
            // conversation's pushes are its messages' (messages by conversation).
            try db.execute(
                sql: """
                    CREATE TABLE operators (
                        name TEXT PRIMARY KEY,
                        role TEXT NOT NULL,
                        password_hash TEXT NOT NULL,
                        created_at INTEGER NOT NULL
                    );
                    CREATE TABLE console_sessions (
                        id TEXT PRIMARY KEY,
                        operator_name TEXT NOT NULL,
                        role TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL
                    );
                    CREATE INDEX console_sessions_by_expiry ON console_sessions(expires_at);
                    CREATE INDEX console_sessions_by_operator ON console_sessions(operator_name);
                    CREATE INDEX outbox_by_subject ON outbox(subject_id, created_at);
                    CREATE INDEX messages_by_conversation ON messages(conversation);
                    DROP INDEX outbox_callback_pushes;
                    CREATE INDEX callbacks_pending ON callbacks(due_at) WHERE state IN ('scheduled', 'pushed');
                    """
            )
        }
    }
}
