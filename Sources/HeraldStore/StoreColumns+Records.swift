import HeraldPush

extension AppRecord: ColumnsDecodable {
    /// The columns of `apps` that `init(columns:)` reads, in its order.
    package static let columns = """
        id, team_id, content_policy, alert_title, alert_body, message_ttl, call_ttl, collapse_by_conversation,
        webhook_url, webhook_secret, apns_key, fcm_account, apns_environment, presence_policy, message_priority,
        queue_order, undeliverable, hold_for, deadlines
        """

    package init(columns: inout some StoreColumns) throws {
        let id = try columns.text()
        self.init(
            id: id,
            teamID: try columns.text(),
            contentPolicy: try columns.named(ContentPolicy.self) { _ in "app \(id) has an unknown content policy" },
            alertTitle: try columns.text(),
            alertBody: try columns.text(),
            messageTTL: try columns.integer(),
            callTTL: try columns.integer(),
            collapseByConversation: try columns.boolean(),
            webhook: try AppWebhook(url: columns.optionalText(), sealedSecret: columns.optionalBytes()),
            apnsKey: try columns.optionalText(),
            fcmAccount: try columns.optionalText(),
            apnsEnvironment: try columns.environment(of: "app \(id)")
        )
        presencePolicy = try columns.named(PresencePolicy.self) { _ in "app \(id) has an unknown presence policy" }
        messagePriority = try columns.int()
        queueOrder = try columns.named(QueueOrder.self) { _ in "app \(id) has an unknown queue order" }
        undeliverable = try columns.optionalNamed(Undeliverable.self) { _ in
            "app \(id) has an unknown undeliverable policy"
        }
        holdFor = try columns.optionalInteger()
        deadlines = try DeadlineRule.rules(stored: columns.optionalText())
    }
}

extension AppWebhook {
    /// The webhook an app's two columns hold: none unless both are set.
    init?(url: String?, sealedSecret: [UInt8]?) {
        guard let url, let sealedSecret else { return nil }
        self.init(url: url, sealedSecret: sealedSecret)
    }
}

extension DeviceRecord: ColumnsDecodable {
    /// The columns of `devices` that `init(columns:)` reads, in its order.
    package static let columnNames = [
        "id", "user_id", "app_id", "platform", "messaging_token", "voip_token", "key_id", "previous_key_id",
        "device_public_key", "relay_public_key", "sealed_relay_secret_key", "sealed_session_keys", "credential_hash",
        "token_dead_reason", "created_at", "updated_at", "apns_environment", "notification_permission",
        "notification_permission_at", "web_push_keys",
    ]
    /// `columnNames` from the table as alias `d`.
    package static let columns = columnNames.map { "d." + $0 }.joined(separator: ", ")

    package init(columns: inout some StoreColumns) throws {
        let id = try columns.text()
        self.init(
            id: id,
            userID: try columns.text(),
            appID: try columns.text(),
            platform: try columns.named(DevicePlatform.self) { _ in "device \(id) has an unknown platform" },
            messagingToken: try columns.optionalText(),
            voipToken: try columns.optionalText(),
            keyID: try columns.text(),
            previousKeyID: try columns.optionalText(),
            devicePublicKey: try columns.bytes(),
            relayPublicKey: try columns.bytes(),
            sealedRelaySecretKey: try columns.bytes(),
            sealedSessionKeys: try columns.bytes(),
            credentialHash: try columns.bytes(),
            tokenDeadReason: try columns.optionalText(),
            createdAt: try columns.integer(),
            updatedAt: try columns.integer(),
            apnsEnvironment: try columns.environment(of: "device \(id)"),
            notificationPermission: try columns.named(NotificationPermission.self) { _ in
                "device \(id) has an unknown notification permission"
            },
            notificationPermissionAt: try columns.optionalInteger(),
            webPushKeys: try columns.optionalBytes().map { bytes in
                guard let keys = WebPushKeys(bytes: bytes) else {
                    throw StoreError.corrupt.with(detail: "device \(id) has malformed Web Push keys")
                }
                return keys
            }
        )
    }
}

extension StoreColumns {
    /// A stored APNs environment: none, or one of APNs' two.
    fileprivate mutating func environment(of owner: @autoclosure () -> String) throws -> APNsEnvironment? {
        try optionalNamed(APNsEnvironment.self) { _ in "\(owner()) has an unknown APNs environment" }
    }
}

extension PresenceRecord: ColumnsDecodable {
    /// The columns of `presence` that `init(columns:)` reads, in its order.
    package static let columns = "device_id, user_id, conversation, state, updated_at, expires_at"

    package init(columns: inout some StoreColumns) throws {
        let deviceID = try columns.text()
        let userID = try columns.text()
        guard let presence = try Self(deviceID: deviceID, userID: userID, joined: &columns) else {
            throw StoreError.corrupt.with(detail: "presence of \(deviceID) has an unknown state")
        }
        self = presence
    }

    /// The presence that a device's row joined: its conversation, state, update and expiry
    /// columns; nil where none was joined (or its state is one this version does not know).
    package init?(deviceID: String, userID: String, joined columns: inout some StoreColumns) throws {
        let conversation = try columns.optionalText()
        let state = try columns.optionalText()
        let updatedAt = try columns.optionalInteger()
        let expiresAt = try columns.optionalInteger()
        guard let state = state.flatMap(PresenceState.init(rawValue:)), let updatedAt, let expiresAt else {
            return nil
        }
        self.init(
            deviceID: deviceID,
            userID: userID,
            conversation: conversation,
            state: state,
            updatedAt: updatedAt,
            expiresAt: expiresAt
        )
    }
}

extension MessageRecord: ColumnsDecodable {
    /// The columns of `messages` that `init(columns:)` reads, in its order.
    package static let columns =
        "id, user_id, conversation, sealed_sender, sealed_text, created_at, expires_at, sealed_push_options"

    package init(columns: inout some StoreColumns) throws {
        self.init(
            id: try columns.text(),
            userID: try columns.text(),
            conversation: try columns.text(),
            // NULL until the relay sealed a sender stored in the clear by an older version.
            sealedSender: try columns.optionalBytes() ?? [],
            sealedText: try columns.bytes(),
            createdAt: try columns.integer(),
            expiresAt: try columns.integer(),
            sealedPushOptions: try columns.optionalBytes()
        )
    }
}
