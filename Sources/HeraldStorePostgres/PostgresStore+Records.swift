import HeraldPush
public import HeraldStore
import NIOCore
import PostgresNIO

extension PostgresStore {
    // MARK: Apps

    static func saveApp(_ app: AppRecord, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run(
            """
            INSERT INTO apps (\(unescaped: AppRecord.columns))
            VALUES (\(app.id), \(app.teamID), \(app.contentPolicy.rawValue), \(app.alertTitle), \(app.alertBody),
                \(app.messageTTL), \(app.callTTL), \(app.collapseByConversation), \(app.webhook?.url),
                \(app.webhook.map { ByteBuffer(bytes: $0.sealedSecret) }),
                \(app.apnsKey), \(app.fcmAccount), \(app.apnsEnvironment?.rawValue), \(app.presencePolicy.rawValue),
                \(app.messagePriority), \(app.queueOrder.rawValue), \(app.undeliverable?.rawValue), \(app.holdFor),
                \(DeadlineRule.stored(app.deadlines)))
            ON CONFLICT (id) DO UPDATE SET team_id = EXCLUDED.team_id, content_policy = EXCLUDED.content_policy,
                alert_title = EXCLUDED.alert_title, alert_body = EXCLUDED.alert_body,
                message_ttl = EXCLUDED.message_ttl, call_ttl = EXCLUDED.call_ttl,
                collapse_by_conversation = EXCLUDED.collapse_by_conversation,
                webhook_url = EXCLUDED.webhook_url, webhook_secret = EXCLUDED.webhook_secret,
                apns_key = EXCLUDED.apns_key, fcm_account = EXCLUDED.fcm_account,
                apns_environment = EXCLUDED.apns_environment,
                presence_policy = EXCLUDED.presence_policy, message_priority = EXCLUDED.message_priority,
                queue_order = EXCLUDED.queue_order, undeliverable = EXCLUDED.undeliverable,
                hold_for = EXCLUDED.hold_for, deadlines = EXCLUDED.deadlines
            """,
            logger: logger
        )
    }

    public func app(id: String) async throws -> AppRecord? {
        try await rows("read an app", "SELECT \(unescaped: AppRecord.columns) FROM apps WHERE id = \(id)")
            .first.map { try $0.record(AppRecord.self) }
    }

    public func apps() async throws -> [AppRecord] {
        try await rows("read the apps", "SELECT \(unescaped: AppRecord.columns) FROM apps ORDER BY id")
            .map { try $0.record(AppRecord.self) }
    }

    // MARK: Devices

    static func saveDevice(_ device: DeviceRecord, on connection: PostgresConnection, logger: Logger) async throws {
        try await Self.takeTokens(
            connection,
            messaging: device.messagingToken,
            voip: device.voipToken,
            from: device.id,
            logger: logger
        )
        try await connection.run(
            """
            INSERT INTO devices
                (id, user_id, app_id, platform, messaging_token, voip_token, key_id, previous_key_id,
                 device_public_key, relay_public_key, sealed_relay_secret_key, sealed_session_keys,
                 credential_hash, token_dead_reason, created_at, updated_at, apns_environment,
                 notification_permission, notification_permission_at, web_push_keys)
            VALUES (\(device.id), \(device.userID), \(device.appID), \(device.platform.rawValue),
                \(device.messagingToken), \(device.voipToken), \(device.keyID), \(device.previousKeyID),
                \(ByteBuffer(device.devicePublicKey)), \(ByteBuffer(device.relayPublicKey)),
                \(ByteBuffer(device.sealedRelaySecretKey)), \(ByteBuffer(device.sealedSessionKeys)),
                \(ByteBuffer(device.credentialHash)), \(device.tokenDeadReason), \(device.createdAt),
                \(device.updatedAt), \(device.apnsEnvironment?.rawValue), \(device.notificationPermission.rawValue),
                \(device.notificationPermissionAt), \(device.webPushKeys.map { ByteBuffer($0.bytes) }))
            ON CONFLICT (id) DO UPDATE SET user_id = EXCLUDED.user_id, app_id = EXCLUDED.app_id,
                platform = EXCLUDED.platform, messaging_token = EXCLUDED.messaging_token,
                voip_token = EXCLUDED.voip_token, key_id = EXCLUDED.key_id,
                previous_key_id = EXCLUDED.previous_key_id, device_public_key = EXCLUDED.device_public_key,
                relay_public_key = EXCLUDED.relay_public_key,
                sealed_relay_secret_key = EXCLUDED.sealed_relay_secret_key,
                sealed_session_keys = EXCLUDED.sealed_session_keys, credential_hash = EXCLUDED.credential_hash,
                token_dead_reason = EXCLUDED.token_dead_reason, created_at = EXCLUDED.created_at,
                updated_at = EXCLUDED.updated_at, apns_environment = EXCLUDED.apns_environment,
                notification_permission = EXCLUDED.notification_permission,
                notification_permission_at = EXCLUDED.notification_permission_at,
                web_push_keys = EXCLUDED.web_push_keys
            """,
            logger: logger
        )
    }

    /// A token belongs to one device: whoever had it loses it. Two nodes giving one token to two
    /// devices at once collide on the unique column; the loser's transaction runs again and then
    /// takes it.
    private static func takeTokens(
        _ connection: PostgresConnection,
        messaging: String?,
        voip: String?,
        from deviceID: String,
        logger: Logger
    ) async throws {
        if let messaging, !messaging.isEmpty {
            try await connection.run(
                "UPDATE devices SET messaging_token = NULL WHERE messaging_token = \(messaging) AND id <> \(deviceID)",
                logger: logger
            )
        }
        if let voip, !voip.isEmpty {
            try await connection.run(
                "UPDATE devices SET voip_token = NULL WHERE voip_token = \(voip) AND id <> \(deviceID)",
                logger: logger
            )
        }
    }

    public func device(id: String) async throws -> DeviceRecord? {
        try await rows("read a device", "SELECT \(unescaped: DeviceRecord.columns) FROM devices d WHERE d.id = \(id)")
            .first.map { try $0.record(DeviceRecord.self) }
    }

    static func updateTokens(
        _ update: TokenUpdate,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        let deviceID = update.deviceID
        // Locks the row: two updates of one device's tokens run one after the other.
        let exists = try await connection.run("SELECT 1 FROM devices WHERE id = \(deviceID) FOR UPDATE", logger: logger)
        guard !exists.isEmpty else { return .stale }
        try await Self.takeTokens(
            connection,
            messaging: update.messaging,
            voip: update.voip,
            from: deviceID,
            logger: logger
        )
        guard update.messaging != nil || update.voip != nil else { return .applied }
        let webPushKeys = update.messaging?.isEmpty == false ? update.webPushKeys.map { ByteBuffer($0.bytes) } : nil
        // A token not given stays; an empty one is removed (NULLIF); either clears the dead reason.
        try await connection.run(
            """
            UPDATE devices SET
                messaging_token = CASE WHEN \(update.messaging)::TEXT IS NULL THEN messaging_token
                    ELSE NULLIF(\(update.messaging)::TEXT, '') END,
                voip_token = CASE WHEN \(update.voip)::TEXT IS NULL THEN voip_token
                    ELSE NULLIF(\(update.voip)::TEXT, '') END,
                web_push_keys = CASE WHEN \(update.messaging)::TEXT IS NULL THEN web_push_keys
                    ELSE \(webPushKeys)::BYTEA END,
                token_dead_reason = NULL, updated_at = \(update.at)
            WHERE id = \(deviceID)
            """,
            logger: logger
        )
        return .applied
    }

    static func deleteDevice(
        id: String,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws
        -> ChangeOutcome
    {
        // Presence and chat disconnects go with the device (ON DELETE CASCADE).
        try await connection.run("DELETE FROM unreported_calls WHERE device_id = \(id)", logger: logger)
        let deleted = try await connection.run("DELETE FROM devices WHERE id = \(id) RETURNING id", logger: logger)
        return deleted.isEmpty ? .stale : .applied
    }

    public func deviceCount() async throws -> Int {
        let rows = try await rows("count the devices", "SELECT COUNT(*) FROM devices")
        do {
            var columns = try Columns(rows.first.unwrap())
            return Int(try columns.next(Int64.self))
        } catch {
            throw StoreError.corrupt.with(detail: "count the devices: \(error)")
        }
    }

    // MARK: Presence

    static func savePresence(_ presence: PresenceRecord, on connection: PostgresConnection, logger: Logger) async throws
    {
        try await connection.run(
            """
            INSERT INTO presence (device_id, user_id, conversation, state, updated_at, expires_at)
            VALUES (\(presence.deviceID), \(presence.userID), \(presence.conversation),
                \(presence.state.rawValue), \(presence.updatedAt), \(presence.expiresAt))
            ON CONFLICT (device_id) DO UPDATE SET user_id = EXCLUDED.user_id,
                conversation = EXCLUDED.conversation, state = EXCLUDED.state,
                updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at
            """,
            logger: logger
        )
    }

    // MARK: Messages and retention

    public func message(id: String) async throws -> MessageRecord? {
        try await rows("read a message", "SELECT \(unescaped: MessageRecord.columns) FROM messages WHERE id = \(id)")
            .first.map { try $0.record(MessageRecord.self) }
    }

    /// On one node at a time: the sweep holds an advisory lock, and a node that finds it taken
    /// skips its turn (another node is doing the same work).
    package func deleteExpired(at now: Int64, historyBefore: Int64) async throws -> (messages: Int, pushes: Int) {
        try await transaction("delete expired records") { [logger] connection -> (messages: Int, pushes: Int) in
            var locked = false
            for row in try await connection.run(
                "SELECT pg_try_advisory_xact_lock(hashtext('herald janitor ' || current_schema()))",
                logger: logger
            ) {
                let held = try row.decode(Bool.self)
                locked = held
            }
            guard locked else { return (0, 0) }
            let messages = try await connection.run(
                "DELETE FROM messages WHERE expires_at <= \(now) RETURNING 1",
                logger: logger
            ).count
            try await connection.run("DELETE FROM ingests WHERE created_at < \(historyBefore)", logger: logger)
            try await connection.run("DELETE FROM live_sessions WHERE expires_at <= \(now)", logger: logger)
            // Calls that ended before the history kept, with their devices and stops.
            try await connection.run(
                """
                WITH gone AS (DELETE FROM calls WHERE ended_at < \(historyBefore) RETURNING id),
                d AS (DELETE FROM call_devices WHERE call_id IN (SELECT id FROM gone))
                DELETE FROM call_stops WHERE call_id IN (SELECT id FROM gone)
                """,
                logger: logger
            )
            // At most a batch per call, so no transaction holds many rows for long.
            let finished = try await connection.run(
                """
                DELETE FROM outbox WHERE push_id IN (
                    SELECT push_id FROM outbox
                    WHERE state NOT IN ('queued', 'sending') AND updated_at < \(historyBefore) LIMIT 10000)
                RETURNING push_id
                """,
                logger: logger
            ).map { row in try row.decode(String.self) }
            if !finished.isEmpty {
                try await connection.run(
                    "DELETE FROM delivery_log WHERE push_id = ANY(\(finished))",
                    logger: logger
                )
                try await connection.run(
                    "DELETE FROM outbox_payloads WHERE push_id = ANY(\(finished))",
                    logger: logger
                )
                try await connection.run("DELETE FROM push_receipts WHERE push_id = ANY(\(finished))", logger: logger)
                try await connection.run("DELETE FROM push_deadlines WHERE push_id = ANY(\(finished))", logger: logger)
            }
            return (messages, finished.count)
        }
    }
}

extension Optional {
    func unwrap() throws(StoreError) -> Wrapped {
        guard let self else { throw StoreError.corrupt.with(detail: "a row was expected and none came") }
        return self
    }
}
