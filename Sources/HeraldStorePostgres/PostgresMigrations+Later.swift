extension PostgresMigrations {
    /// The migrations after v4, in order (`all` follows `first` with them): webhook events and
    /// app webhooks, calls, fleets, callbacks, push options, queue order and now or never. Never edited once released, only
    /// added at the end.
    static let later: [(name: String, sql: [String])] = [
        (
            "v5: webhook events",
            [
                // As on SQLite's v13: the durable queue of events for the apps' webhooks.
                // `sequence` orders the events of one ordering key (its writers hold the row of
                // what the key names: a call, a callback, a chat), so a sender takes the first
                // undelivered event of each key only. `data` holds ids and states, never content.
                """
                CREATE TABLE webhook_events (
                    sequence BIGSERIAL PRIMARY KEY,
                    id TEXT NOT NULL UNIQUE,
                    app_id TEXT NOT NULL,
                    type TEXT NOT NULL,
                    ordering_key TEXT NOT NULL,
                    data TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    state TEXT NOT NULL DEFAULT 'pending',
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at BIGINT NOT NULL,
                    owner TEXT,
                    lease_until BIGINT,
                    last_error TEXT,
                    delivered_at BIGINT,
                    updated_at BIGINT NOT NULL
                )
                """,
                """
                CREATE INDEX webhook_events_by_key ON webhook_events (ordering_key, sequence)
                WHERE state IN ('pending', 'sending')
                """,
                """
                CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at)
                WHERE state IN ('pending', 'sending')
                """,
                "CREATE INDEX webhook_events_by_app ON webhook_events (app_id, created_at, id)",
            ]
        ),
        (
            "v6: app webhooks",
            [
                // As on SQLite: an app's webhook url, and its signing secret sealed with the
                // master key.
                "ALTER TABLE apps ADD COLUMN webhook_url TEXT",
                "ALTER TABLE apps ADD COLUMN webhook_secret BYTEA",
            ]
        ),
        (
            "v7: calls",
            [
                """
                CREATE TABLE calls (
                    id TEXT PRIMARY KEY,
                    app_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    media TEXT NOT NULL,
                    sealed_caller BYTEA NOT NULL,
                    state TEXT NOT NULL DEFAULT 'ringing',
                    device_id TEXT,
                    reason TEXT,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    ringing_at BIGINT,
                    ended_at BIGINT,
                    updated_at BIGINT NOT NULL,
                    timer_owner TEXT,
                    timer_lease BIGINT
                )
                """,
                "CREATE INDEX calls_due ON calls (expires_at) WHERE state = 'ringing'",
                """
                CREATE TABLE call_devices (
                    call_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    report TEXT NOT NULL DEFAULT 'pushed',
                    reported_at BIGINT,
                    PRIMARY KEY (call_id, device_id)
                )
                """,
                """
                CREATE TABLE call_stops (
                    call_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    node_id TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    PRIMARY KEY (call_id, device_id)
                )
                """,
                "CREATE INDEX call_stops_by_node ON call_stops (node_id)",
            ]
        ),
        (
            "v8: fleets: apps' APNs keys and FCM accounts, devices' environment",
            [
                // As on SQLite: NULL is the default key, account and environment.
                "ALTER TABLE apps ADD COLUMN apns_key TEXT",
                "ALTER TABLE apps ADD COLUMN fcm_account TEXT",
                "ALTER TABLE apps ADD COLUMN apns_environment TEXT",
                "ALTER TABLE devices ADD COLUMN apns_environment TEXT",
            ]
        ),
        (
            "v9: callbacks",
            [
                // Callbacks (seed 002): the dialog and the service id sealed by the relay;
                // `version` moves with every change and claim (an answer's compare-and-set);
                // `owner` and `lease_until` hold a claim while the push is queued.
                """
                CREATE TABLE callbacks (
                    id TEXT PRIMARY KEY,
                    app_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    state TEXT NOT NULL,
                    sealed_dialog BYTEA NOT NULL,
                    due_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    pushes INTEGER NOT NULL DEFAULT 0,
                    version BIGINT NOT NULL DEFAULT 0,
                    last_action TEXT,
                    owner TEXT,
                    lease_until BIGINT,
                    idempotency_key TEXT UNIQUE,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX callbacks_due ON callbacks (due_at) WHERE state = 'scheduled'",
                "CREATE INDEX callbacks_expiring ON callbacks (expires_at) WHERE state IN ('scheduled', 'pushed')",
                """
                CREATE TABLE callback_history (
                    callback_id TEXT NOT NULL,
                    position INTEGER NOT NULL,
                    at BIGINT NOT NULL,
                    event TEXT NOT NULL,
                    state TEXT NOT NULL,
                    action TEXT,
                    sequence INTEGER,
                    next_push_at BIGINT,
                    PRIMARY KEY (callback_id, position)
                )
                """,
            ]
        ),
        (
            "v10: push options: an app's presence policy and message priority",
            [
                "ALTER TABLE apps ADD COLUMN presence_policy TEXT NOT NULL DEFAULT 'per_device'",
                "ALTER TABLE apps ADD COLUMN message_priority INTEGER NOT NULL DEFAULT 5",
            ]
        ),
        (
            "v11: queue order and now or never",
            [
                // As on SQLite: an app's queue order; a push's customer wait (NULL: ordered by
                // its time in the queue) and its "now or never" flag. Nullable and constant
                // defaults: no table rewrite. The queued indexes take the claim's own order
                // expression, so the claim still reads them in order and stops at its limit.
                "ALTER TABLE apps ADD COLUMN queue_order TEXT NOT NULL DEFAULT 'queue_time'",
                "ALTER TABLE outbox ADD COLUMN waiting_since BIGINT",
                "ALTER TABLE outbox ADD COLUMN now_or_never BOOLEAN NOT NULL DEFAULT false",
                "DROP INDEX outbox_queued",
                """
                CREATE INDEX outbox_queued ON outbox (priority DESC, (COALESCE(waiting_since, created_at)) ASC)
                WHERE state = 'queued'
                """,
                "DROP INDEX outbox_queued_by_network",
                """
                CREATE INDEX outbox_queued_by_network
                ON outbox (network, priority DESC, (COALESCE(waiting_since, created_at)) ASC)
                WHERE state = 'queued'
                """,
            ]
        ),
        (
            "v12: notification permission: whether a device may show notifications",
            [
                // As on SQLite: every device stored before could show them as far as the relay knew.
                "ALTER TABLE devices ADD COLUMN notification_permission TEXT NOT NULL DEFAULT 'granted'",
                "ALTER TABLE devices ADD COLUMN notification_permission_at BIGINT",
            ]
        ),
        (
            "v13: a message's push options, sealed, for a push made after a live delivery",
            ["ALTER TABLE messages ADD COLUMN sealed_push_options BYTEA"]
        ),
        (
            "v14: recipients versions: a number per user that every change to its recipients raises",
            [
                // A node keeps the recipients it read with their version; an ingest made from them
                // is written only while the version is still the user's (`Ingest.recipientsVersion`).
                // Kept by triggers, so no writer of devices, presence or live channels can forget
                // it. A user without a row is at version 0. The functions keep the schema they were
                // made in, whatever the session that fires them has on its search path.
                "CREATE TABLE recipient_versions (user_id TEXT PRIMARY KEY, version BIGINT NOT NULL)",
                """
                CREATE FUNCTION herald_recipients_changed(changed TEXT) RETURNS void LANGUAGE sql
                SET search_path FROM CURRENT AS $$
                    INSERT INTO recipient_versions (user_id, version) VALUES (changed, 1)
                    ON CONFLICT (user_id) DO UPDATE SET version = recipient_versions.version + 1
                $$
                """,
                // Devices and presence name their user; a live channel names its device.
                """
                CREATE FUNCTION herald_user_rows_changed() RETURNS trigger LANGUAGE plpgsql
                SET search_path FROM CURRENT AS $$
                BEGIN
                    IF TG_OP <> 'INSERT' THEN PERFORM herald_recipients_changed(OLD.user_id); END IF;
                    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.user_id IS DISTINCT FROM OLD.user_id) THEN
                        PERFORM herald_recipients_changed(NEW.user_id);
                    END IF;
                    RETURN NULL;
                END
                $$
                """,
                """
                CREATE FUNCTION herald_device_rows_changed() RETURNS trigger LANGUAGE plpgsql
                SET search_path FROM CURRENT AS $$
                BEGIN
                    IF TG_OP <> 'INSERT' THEN
                        PERFORM herald_recipients_changed(user_id) FROM devices WHERE id = OLD.device_id;
                    END IF;
                    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.device_id IS DISTINCT FROM OLD.device_id) THEN
                        PERFORM herald_recipients_changed(user_id) FROM devices WHERE id = NEW.device_id;
                    END IF;
                    RETURN NULL;
                END
                $$
                """,
                """
                CREATE TRIGGER devices_recipients AFTER INSERT OR UPDATE OR DELETE ON devices
                FOR EACH ROW EXECUTE FUNCTION herald_user_rows_changed()
                """,
                """
                CREATE TRIGGER presence_recipients AFTER INSERT OR UPDATE OR DELETE ON presence
                FOR EACH ROW EXECUTE FUNCTION herald_user_rows_changed()
                """,
                """
                CREATE TRIGGER live_sessions_recipients AFTER INSERT OR UPDATE OR DELETE ON live_sessions
                FOR EACH ROW EXECUTE FUNCTION herald_device_rows_changed()
                """,
            ]
        ),
        (
            "v15: API keys and the audit log",
            [
                // As on SQLite's v22: a key's digest, never its secret; the audit log names who
                // changed what.
                """
                CREATE TABLE api_keys (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    app_id TEXT,
                    scopes TEXT NOT NULL,
                    secret_digest BYTEA NOT NULL,
                    rate_per_second DOUBLE PRECISION,
                    burst INTEGER,
                    created_at BIGINT NOT NULL,
                    revoked_at BIGINT
                )
                """,
                """
                CREATE TABLE audit_log (
                    id TEXT PRIMARY KEY,
                    at BIGINT NOT NULL,
                    actor TEXT NOT NULL,
                    action TEXT NOT NULL,
                    target TEXT NOT NULL,
                    app_id TEXT
                )
                """,
            ]
        ),
        (
            "v16: messages held for a user without a device, and each app's policy for them",
            [
                // As on SQLite's v23: a held message is a row of `messages` and one here until it
                // is released or its hold ends; an app's NULLs take the relay's default.
                """
                CREATE TABLE held_messages (
                    message_id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    app_id TEXT,
                    held_at BIGINT NOT NULL,
                    held_until BIGINT NOT NULL
                )
                """,
                "CREATE INDEX held_messages_by_user ON held_messages(user_id, held_at)",
                "CREATE INDEX held_messages_by_end ON held_messages(held_until)",
                "ALTER TABLE apps ADD COLUMN undeliverable TEXT",
                "ALTER TABLE apps ADD COLUMN hold_for BIGINT",
            ]
        ),
        (
            "v17: a callback's pushes by callback and push number",
            [
                // As on SQLite's v24: a callback's push is named `<callback id>#<push number>`;
                // its delivery writes `callback.pushed` with the count of that push's devices,
                // read through this index.
                "CREATE INDEX outbox_callback_pushes ON outbox (subject_id) WHERE kind = 'callback'"
            ]
        ),
        (
            "v18: receipts from the phones",
            [
                // As on SQLite's v25: one row per push and stage the phone reported; the stage
                // is the key's second half, so a receipt sent again finds its row.
                """
                CREATE TABLE push_receipts (
                    push_id TEXT NOT NULL,
                    stage TEXT NOT NULL,
                    device_at BIGINT NOT NULL,
                    received_at BIGINT NOT NULL,
                    failure TEXT,
                    PRIMARY KEY (push_id, stage)
                )
                """
            ]
        ),
        (
            "v19: push deadlines and unreported calls",
            [
                // As on SQLite's v26: a push's deadline until a receipt cancels it or the node
                // that claimed it settles it; an app's rules as one JSON column; a device's VoIP
                // pushes left unreported to CallKit.
                """
                CREATE TABLE push_deadlines (
                    push_id TEXT NOT NULL,
                    action TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    due_at BIGINT NOT NULL,
                    owner TEXT,
                    lease_until BIGINT,
                    PRIMARY KEY (push_id, action)
                )
                """,
                "CREATE INDEX push_deadlines_due ON push_deadlines (due_at)",
                "CREATE TABLE unreported_calls (device_id TEXT PRIMARY KEY, count BIGINT NOT NULL, last_at BIGINT NOT NULL)",
                "ALTER TABLE apps ADD COLUMN deadlines TEXT",
            ]
        ),
        (
            "v20: a push's trace context",
            [
                // As on SQLite's v27: the W3C traceparent of the request that made a push, and
                // of a webhook event made from a push, written only while tracing is on
                // (docs/tracing.md); NULL otherwise, and for every row written before.
                "ALTER TABLE outbox ADD COLUMN trace_context TEXT",
                "ALTER TABLE webhook_events ADD COLUMN trace_context TEXT",
            ]
        ),
        (
            "v21: a browser's Web Push subscription keys",
            [
                // As on SQLite's v28: p256dh ‖ auth (81 bytes), written with the endpoint (the
                // messaging token) and read by the claim.
                "ALTER TABLE devices ADD COLUMN web_push_keys BYTEA",
                // The outbox takes the two new networks.
                "ALTER TABLE outbox DROP CONSTRAINT outbox_network_check",
                "ALTER TABLE outbox ADD CONSTRAINT outbox_network_check CHECK (network IN ('apns', 'fcm', 'webpush', 'hms'))",
            ]
        ),
        (
            "v22: the console's operators and sessions, pushes by subject",
            [
                // As on SQLite's v29: an operator's password as its Argon2id encoded hash, a
                // session under the digest of its cookie's secret; pushes found by their subject,
                // an index that also serves a callback's pushes (v17's partial index is dropped).
                """
                CREATE TABLE operators (
                    name TEXT PRIMARY KEY,
                    role TEXT NOT NULL,
                    password_hash TEXT NOT NULL,
                    created_at BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE console_sessions (
                    id TEXT PRIMARY KEY,
                    operator_name TEXT NOT NULL,
                    role TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at)",
                "CREATE INDEX console_sessions_by_operator ON console_sessions (operator_name)",
                "CREATE INDEX outbox_by_subject ON outbox (subject_id, created_at)",
                "CREATE INDEX messages_by_conversation ON messages (conversation)",
                "DROP INDEX outbox_callback_pushes",
                "CREATE INDEX callbacks_pending ON callbacks (due_at) WHERE state IN ('scheduled', 'pushed')",
            ]
        ),
    ]
}
