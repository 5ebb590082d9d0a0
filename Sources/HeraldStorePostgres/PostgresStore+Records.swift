import HeraldPush
public import HeraldStore
import NIOCore
import PostgresNIO

/// Reads a row's columns in order, so a record's reader and its SELECT list cannot drift apart
/// by name, and a column is found by position rather than by a name search.
struct Columns {
    private let row: PostgresRandomAccessRow
    private var index = 0

    init(_ row: PostgresRow) {
        self.row = PostgresRandomAccessRow(row)
    }

    mutating func next<T: PostgresDecodable>(_ type: T.Type = T.self) throws -> T {
        defer { index += 1 }
        return try row[index].decode(T.self)
    }

    mutating func bytes() throws -> [UInt8] {
        try next(ByteBuffer.self).bytes
    }

    mutating func optionalBytes() throws -> [UInt8]? {
        try next(ByteBuffer?.self)?.bytes
    }
}

extension PostgresStore {
    // MARK: Apps

    static let appColumns = """
        id, team_id, content_policy, alert_title, alert_body, message_ttl, call_ttl, collapse_by_conversation,
        webhook_url, webhook_secret, apns_key, fcm_account, apns_environment, presence_policy, message_priority,
        queue_order, undeliverable, hold_for
        """

    static func saveApp(_ app: AppRecord, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run(
            """
            INSERT INTO apps (\(unescaped: Self.appColumns))
            VALUES (\(app.id), \(app.teamID), \(app.contentPolicy.rawValue), \(app.alertTitle), \(app.alertBody),
                \(app.messageTTL), \(app.callTTL), \(app.collapseByConversation), \(app.webhook?.url),
                \(app.webhook.map { ByteBuffer(bytes: $0.sealedSecret) }),
                \(app.apnsKey), \(app.fcmAccount), \(app.apnsEnvironment?.rawValue), \(app.presencePolicy.rawValue),
                \(app.messagePriority), \(app.queueOrder.rawValue), \(app.undeliverable?.rawValue), \(app.holdFor))
            ON CONFLICT (id) DO UPDATE SET team_id = EXCLUDED.team_id, content_policy = EXCLUDED.content_policy,
                alert_title = EXCLUDED.alert_title, alert_body = EXCLUDED.alert_body,
                message_ttl = EXCLUDED.message_ttl, call_ttl = EXCLUDED.call_ttl,
                collapse_by_conversation = EXCLUDED.collapse_by_conversation,
                webhook_url = EXCLUDED.webhook_url, webhook_secret = EXCLUDED.webhook_secret,
                apns_key = EXCLUDED.apns_key, fcm_account = EXCLUDED.fcm_account,
                apns_environment = EXCLUDED.apns_environment,
                presence_policy = EXCLUDED.presence_policy, message_priority = EXCLUDED.message_priority,
                queue_order = EXCLUDED.queue_order, undeliverable = EXCLUDED.undeliverable,
                hold_for = EXCLUDED.hold_for
            """,
            logger: logger
        )
    }

    public func app(id: String) async throws -> AppRecord? {
        try await rows("read an app", "SELECT \(unescaped: Self.appColumns) FROM apps WHERE id = \(id)")
            .first.map(Self.app(from:))
    }

    public func apps() async throws -> [AppRecord] {
        try await rows("read the apps", "SELECT \(unescaped: Self.appColumns) FROM apps ORDER BY id")
            .map(Self.app(from:))
    }

    static func app(from row: PostgresRow) throws -> AppRecord {
        var columns = Columns(row)
        let id: String = try columns.next()
        let teamID: String = try columns.next()
        guard let policy = ContentPolicy(rawValue: try columns.next()) else {
            throw StoreError.corrupt.with(detail: "app \(id) has an unknown content policy")
        }
        var app = AppRecord(
            id: id,
            teamID: teamID,
            contentPolicy: policy,
            alertTitle: try columns.next(),
            alertBody: try columns.next(),
            messageTTL: try columns.next(),
            callTTL: try columns.next(),
            collapseByConversation: try columns.next(),
            webhook: try {
                let url: String? = try columns.next()
                let secret: ByteBuffer? = try columns.next()
                guard let url, let secret else { return nil }
                return AppWebhook(url: url, sealedSecret: Array(secret.readableBytesView))
            }(),
            apnsKey: try columns.next(),
            fcmAccount: try columns.next(),
            apnsEnvironment: try environment(try columns.next(), of: "app", id)
        )
        guard let presencePolicy = PresencePolicy(rawValue: try columns.next()) else {
            throw StoreError.corrupt.with(detail: "app \(id) has an unknown presence policy")
        }
        app.presencePolicy = presencePolicy
        let priority: Int32 = try columns.next()
        app.messagePriority = Int(priority)
        guard let queueOrder = QueueOrder(rawValue: try columns.next()) else {
            throw StoreError.corrupt.with(detail: "app \(id) has an unknown queue order")
        }
        app.queueOrder = queueOrder
        let undeliverable: String? = try columns.next()
        if let undeliverable {
            guard let policy = Undeliverable(rawValue: undeliverable) else {
                throw StoreError.corrupt.with(detail: "app \(id) has an unknown undeliverable policy")
            }
            app.undeliverable = policy
        }
        app.holdFor = try columns.next()
        return app
    }

    // MARK: Devices

    /// The device columns in the order `device(_:)` reads them, from table alias `d`.
    static let deviceColumns = """
        d.id, d.user_id, d.app_id, d.platform, d.messaging_token, d.voip_token, d.key_id, d.previous_key_id, \
        d.device_public_key, d.relay_public_key, d.sealed_relay_secret_key, d.sealed_session_keys, \
        d.credential_hash, d.token_dead_reason, d.created_at, d.updated_at, d.apns_environment, \
        d.notification_permission, d.notification_permission_at
        """

    static func device(_ columns: inout Columns) throws -> DeviceRecord {
        let id: String = try columns.next()
        let userID: String = try columns.next()
        let appID: String = try columns.next()
        guard let platform = DevicePlatform(rawValue: try columns.next()) else {
            throw StoreError.corrupt.with(detail: "device \(id) has an unknown platform")
        }
        return DeviceRecord(
            id: id,
            userID: userID,
            appID: appID,
            platform: platform,
            messagingToken: try columns.next(),
            voipToken: try columns.next(),
            keyID: try columns.next(),
            previousKeyID: try columns.next(),
            devicePublicKey: try columns.bytes(),
            relayPublicKey: try columns.bytes(),
            sealedRelaySecretKey: try columns.bytes(),
            sealedSessionKeys: try columns.bytes(),
            credentialHash: try columns.bytes(),
            tokenDeadReason: try columns.next(),
            createdAt: try columns.next(),
            updatedAt: try columns.next(),
            apnsEnvironment: try environment(try columns.next(), of: "device", id),
            notificationPermission: try permission(try columns.next(), of: id),
            notificationPermissionAt: try columns.next()
        )
    }

    /// A stored notification permission.
    static func permission(_ text: String, of id: String) throws -> NotificationPermission {
        guard let permission = NotificationPermission(rawValue: text) else {
            throw StoreError.corrupt.with(detail: "device \(id) has an unknown notification permission")
        }
        return permission
    }

    /// A stored APNs environment: none, or one of APNs' two.
    static func environment(_ text: String?, of kind: String, _ id: String) throws -> APNsEnvironment? {
        guard let text else { return nil }
        guard let environment = APNsEnvironment(rawValue: text) else {
            throw StoreError.corrupt.with(detail: "\(kind) \(id) has an unknown APNs environment")
        }
        return environment
    }

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
                 notification_permission, notification_permission_at)
            VALUES (\(device.id), \(device.userID), \(device.appID), \(device.platform.rawValue),
                \(device.messagingToken), \(device.voipToken), \(device.keyID), \(device.previousKeyID),
                \(ByteBuffer(device.devicePublicKey)), \(ByteBuffer(device.relayPublicKey)),
                \(ByteBuffer(device.sealedRelaySecretKey)), \(ByteBuffer(device.sealedSessionKeys)),
                \(ByteBuffer(device.credentialHash)), \(device.tokenDeadReason), \(device.createdAt),
                \(device.updatedAt), \(device.apnsEnvironment?.rawValue), \(device.notificationPermission.rawValue),
                \(device.notificationPermissionAt))
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
                notification_permission_at = EXCLUDED.notification_permission_at
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
        try await rows("read a device", "SELECT \(unescaped: Self.deviceColumns) FROM devices d WHERE d.id = \(id)")
            .first.map { row in
                var columns = Columns(row)
                return try Self.device(&columns)
            }
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
        // A token not given stays; an empty one is removed (NULLIF); either clears the dead reason.
        try await connection.run(
            """
            UPDATE devices SET
                messaging_token = CASE WHEN \(update.messaging)::TEXT IS NULL THEN messaging_token
                    ELSE NULLIF(\(update.messaging)::TEXT, '') END,
                voip_token = CASE WHEN \(update.voip)::TEXT IS NULL THEN voip_token
                    ELSE NULLIF(\(update.voip)::TEXT, '') END,
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

    static let messageColumns =
        "id, user_id, conversation, sealed_sender, sealed_text, created_at, expires_at, sealed_push_options"

    public func message(id: String) async throws -> MessageRecord? {
        try await rows("read a message", "SELECT \(unescaped: Self.messageColumns) FROM messages WHERE id = \(id)")
            .first.map(Self.message(from:))
    }

    /// A row of `messageColumns`.
    static func message(from row: PostgresRow) throws -> MessageRecord {
        var columns = Columns(row)
        return MessageRecord(
            id: try columns.next(),
            userID: try columns.next(),
            conversation: try columns.next(),
            sealedSender: try columns.bytes(),
            sealedText: try columns.bytes(),
            createdAt: try columns.next(),
            expiresAt: try columns.next(),
            sealedPushOptions: try columns.optionalBytes()
        )
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
