import HeraldCrypto
import HeraldPush
import HeraldRelayAPI
import HeraldStore
import HeraldWebPushCore

/// The rules of a device's life at the relay, as data: apps, activation (and re-activation with
/// new keys), late or refreshed tokens, logout, heartbeats and notification permission reports.
///
/// Pure: each rule takes the request, what the relay read for it and the time, and answers a
/// `RelayChange` (or a typed refusal). `RelayActivation` reads and commits around it; the rules'
/// table tests need no store.
struct DevicePlanner: Sendable {
    var configuration: RelayConfiguration

    // MARK: Apps

    /// Checks an app's settings, before its webhook secret is sealed.
    func checkApp(_ app: AppRecord) throws(RelayError) {
        try configuration.check(app.id, "id", pattern: .bundleID)
        try configuration.check(app.teamID, "team_id", pattern: .identifier)
        guard (1...AppRecord.maximumMessageTTL).contains(app.messageTTL) else {
            throw .invalidField("message_ttl", "must be between 1 and \(AppRecord.maximumMessageTTL) seconds (30 days)")
        }
        guard app.callTTL > 0, app.callTTL <= 3600 else {
            throw .invalidField("call_ttl", "must be between 1 and 3600 seconds")
        }
        guard app.messagePriority == 5 || app.messagePriority == 10 else {
            throw .invalidField("message_priority", "must be 5 or 10 (a message push is an alert)")
        }
        if let holdFor = app.holdFor, !UndeliverableConfiguration.holdForSeconds.contains(holdFor) {
            throw .invalidField(
                "hold_for",
                "must be between 1 and \(UndeliverableConfiguration.holdForSeconds.upperBound) seconds (7 days)"
            )
        }
        if let problem = DeadlinePlanner.problem(with: app.deadlines) {
            throw .invalidField(problem.field, problem.reason)
        }
        try configuration.checkText(app.alertTitle, "alert_title")
        try configuration.checkText(app.alertBody, "alert_body")
        let fleet = configuration.fleet
        if let name = app.apnsKey {
            try configuration.check(name, "apns_key", pattern: .identifier)
            try Self.checkKnown(name, "apns_key", in: fleet.apnsKeys, what: "APNs key")
        }
        if let name = app.fcmAccount {
            try configuration.check(name, "fcm_account", pattern: .identifier)
            try Self.checkKnown(name, "fcm_account", in: fleet.fcmAccounts, what: "FCM service account")
        }
    }

    /// A credential an app names must be one the fleet configured (when it lists them).
    private static func checkKnown(
        _ name: String,
        _ field: String,
        in known: Set<String>?,
        what: String
    )
        throws(RelayError)
    {
        guard let known, !known.contains(name) else { return }
        throw .invalidField(
            field,
            "names no configured \(what) (configured: \(known.sorted().joined(separator: ", ")))"
        )
    }

    /// Saves a checked app with its sealed webhook (none without one).
    func saveApp(_ app: AppRecord, webhook: AppWebhook?) -> Planned<AppRecord> {
        var app = app
        app.webhook = webhook
        return Planned(change: RelayChange(writes: [.saveApp(app)], effects: [.appSaved(app)]), answer: app)
    }

    // MARK: Activation

    /// Checks the ids an activation names, before anything is read for it.
    func checkActivationIDs(_ request: ActivationRequest) throws(RelayError) {
        try configuration.check(request.userID, "user_id", pattern: .identifier)
        try configuration.check(request.app, "app", pattern: .bundleID)
    }

    /// Checks an activation against what was read for it: its app, and the device it
    /// re-activates (`previous`, read when `request.deviceID` is set; `nil` when there is none).
    /// Answers the app and the device's public key, for the key agreement.
    func admitActivation(
        _ request: ActivationRequest,
        app: AppRecord?,
        previous: DeviceRecord?
    ) throws(RelayError) -> (app: AppRecord, devicePublicKey: PublicKey, subscription: WebPushSubscription?) {
        guard let app else { throw .invalidField("app", "names no app registered with the relay") }
        let devicePublicKey: PublicKey
        do {
            devicePublicKey = try PublicKey(base64: request.publicKey)
        } catch {
            throw .invalidField("public_key", "must be a 32-byte crypto_kx public key in base64")
        }
        try configuration.checkToken(request.messagingToken, "messaging_token", platform: request.platform)
        try configuration.checkToken(request.voipToken, "voip_token", platform: request.platform)
        if request.platform != .ios, request.voipToken != nil {
            throw .invalidField("voip_token", "exists on iOS only (PushKit)")
        }
        if request.platform != .ios, request.apnsEnvironment != nil {
            throw .invalidField("apns_environment", "is for iOS devices only (APNs)")
        }
        let subscription = try subscription(request.subscription, platform: request.platform)
        if let existing = request.deviceID {
            guard let previous else { throw RelayError.notFound.with(detail: "no device \(existing)") }
            guard previous.userID == request.userID, previous.appID == request.app else {
                throw RelayError.forbidden.with(detail: "device \(existing) belongs to another user or app")
            }
            guard previous.platform == request.platform else {
                throw RelayError.invalidField("platform", "cannot change on re-activation; activate a new device")
            }
        }
        return (app, devicePublicKey, subscription)
    }

    /// A browser's subscription, checked (an HTTPS endpoint, not a private address unless the
    /// relay allows them, keys of the RFC's lengths); refused on any other platform.
    func subscription(
        _ body: WebPushSubscriptionBody?,
        platform: DevicePlatform
    ) throws(RelayError) -> WebPushSubscription? {
        guard let body else { return nil }
        guard platform == .web else { throw .invalidField("subscription", "is for browsers only (platform web)") }
        do {
            return try WebPushSubscription.parse(
                endpoint: body.endpoint,
                p256dh: body.keys.p256dh,
                auth: body.keys.auth,
                allowPrivateEndpoints: configuration.fleet.allowPrivateWebPushEndpoints
            )
        } catch {
            throw .invalidField(error.field, error.message)
        }
    }

    /// The device an admitted activation stores, with the relay's half of the key agreement
    /// (`keys`, made for it), and the answer the device gets.
    func activation(
        _ request: ActivationRequest,
        app: AppRecord,
        previous: DeviceRecord?,
        devicePublicKey: PublicKey,
        keys: ActivationKeys,
        subscription: WebPushSubscription? = nil,
        now: Int64
    ) -> Planned<ActivationResponse> {
        // A browser's endpoint is its messaging token; its keys go with it.
        let keepsToken = request.messagingToken == nil && subscription == nil
        let device = DeviceRecord(
            id: keys.deviceID,
            userID: request.userID,
            appID: app.id,
            platform: request.platform,
            messagingToken: subscription?.endpoint ?? request.messagingToken ?? previous?.messagingToken,
            voipToken: request.voipToken ?? previous?.voipToken,
            keyID: keys.keyID,
            previousKeyID: previous?.keyID,
            devicePublicKey: devicePublicKey.bytes,
            relayPublicKey: keys.relayPublicKey.bytes,
            sealedRelaySecretKey: keys.sealedRelaySecretKey,
            sealedSessionKeys: keys.sealedSessionKeys,
            credentialHash: keys.credential.hash,
            tokenDeadReason: nil,
            createdAt: previous?.createdAt ?? now,
            updatedAt: now,
            apnsEnvironment: environment(of: request, app: app, previous: previous),
            // A re-activation keeps what the device last reported; a new device starts granted.
            notificationPermission: previous?.notificationPermission ?? .granted,
            notificationPermissionAt: previous?.notificationPermissionAt,
            webPushKeys: subscription?.keys ?? (keepsToken ? previous?.webPushKeys : nil)
        )
        let change = RelayChange(
            writes: [.saveDevice(device)],
            // After the save: a message held from now on finds the device and is pushed instead.
            effects: [
                .countActivation, .releaseHeld(userID: device.userID),
                .log(
                    "device activated",
                    [
                        "device": device.id, "app": app.id, "key_id": device.keyID,
                        "rotated": "\(previous != nil)",
                    ]
                ),
            ]
        )
        let response = ActivationResponse(
            deviceID: device.id,
            userID: request.userID,
            app: app.id,
            relayPublicKey: keys.relayPublicKey.base64,
            keyID: device.keyID,
            previousKeyID: device.previousKeyID,
            deviceCredential: keys.credential.text,
            contentPolicy: app.contentPolicy
        )
        return Planned(change: change, answer: response)
    }

    /// The APNs environment of an activating iOS device: the one it names; on a re-activation
    /// that keeps its tokens, the one it had; else its app's, else the relay's default (none when
    /// the relay does not know the provider's keys: the key's environment then applies).
    func environment(of request: ActivationRequest, app: AppRecord, previous: DeviceRecord?) -> APNsEnvironment? {
        guard request.platform == .ios else { return nil }
        if let named = request.apnsEnvironment { return named }
        if request.messagingToken == nil, request.voipToken == nil, let kept = previous?.apnsEnvironment { return kept }
        return app.apnsEnvironment ?? configuration.fleet.defaultAPNsEnvironment
    }

    // MARK: Tokens and logout

    /// Sets late or refreshed tokens on `current` (the device as read; `nil` when there is none).
    func tokenUpdate(
        _ request: TokenUpdateRequest,
        deviceID: String,
        current: DeviceRecord?,
        now: Int64
    ) throws(RelayError) -> Planned<DeviceView> {
        guard request.messagingToken != nil || request.voipToken != nil || request.subscription != nil else {
            throw .invalidField("messaging_token", "or 'voip_token' or 'subscription' must be given")
        }
        let gone = RelayError.notFound.with(detail: "no device \(deviceID)")
        guard let current else { throw gone }
        let subscription = try subscription(request.subscription, platform: current.platform)
        if request.messagingToken?.isEmpty == false {
            try configuration.checkToken(request.messagingToken, "messaging_token", platform: current.platform)
        }
        if request.voipToken?.isEmpty == false {
            guard current.platform == .ios else { throw .invalidField("voip_token", "exists on iOS only (PushKit)") }
            try configuration.checkToken(request.voipToken, "voip_token", platform: current.platform)
        }
        let update = TokenUpdate(
            deviceID: deviceID,
            messaging: subscription?.endpoint ?? request.messagingToken,
            voip: request.voipToken,
            at: now,
            webPushKeys: subscription?.keys
        )
        let change = RelayChange(
            writes: [.updateTokens(update)],
            // A device that activated without a token takes what is held for its user now.
            effectsWhenApplied: [
                .log("device tokens updated", ["device": deviceID]), .releaseHeld(userID: current.userID),
            ],
            refusalWhenStale: gone
        )
        return Planned(change: change, answer: DeviceView(update.applied(to: current)))
    }

    /// Logout: the device's tokens, keys, credential and presence are gone.
    func deactivation(deviceID: String) -> RelayChange {
        RelayChange(
            writes: [.deleteDevice(id: deviceID)],
            effectsWhenApplied: [.log("device deactivated", ["device": deviceID])],
            refusalWhenStale: RelayError.notFound.with(detail: "no device \(deviceID)")
        )
    }

    // MARK: Presence and permission

    /// A heartbeat: the device's presence until its time-to-live runs out.
    func heartbeat(
        device: DeviceRecord,
        _ request: HeartbeatRequest,
        now: Int64
    ) throws(RelayError)
        -> Planned<PresenceView>
    {
        let maximum = configuration.maximumPresenceTTL.components.seconds
        let ttl = request.ttl.map { Duration.seconds($0) } ?? configuration.defaultPresenceTTL
        guard ttl >= .seconds(1), ttl <= configuration.maximumPresenceTTL else {
            throw .invalidField("ttl", "must be between 1 and \(maximum) seconds")
        }
        if let conversation = request.conversation {
            try configuration.check(conversation, "conversation", pattern: .identifier)
        }
        let record = PresenceRecord(
            deviceID: device.id,
            userID: device.userID,
            conversation: request.conversation,
            state: request.state,
            updatedAt: now,
            expiresAt: now + ttl.milliseconds
        )
        let view = PresenceView(
            deviceID: device.id,
            state: record.state,
            conversation: record.conversation,
            expiresAt: record.expiresAt
        )
        return Planned(change: RelayChange(writes: [.savePresence(record)]), answer: view)
    }

    /// A device's report of its notification permission: a change writes its webhook event
    /// (`device.notifications_denied` / `device.notifications_granted`, when the app has a
    /// webhook) with it; the same permission again writes nothing.
    func permissionReport(
        device: DeviceRecord,
        _ request: NotificationPermissionRequest,
        app: AppRecord?,
        now: Int64
    ) -> Planned<PermissionAnswer> {
        var events: [WebhookEvent] = []
        if let app {
            events = WebhookEvent.reporting(
                app: app,
                request.permission == .denied ? .deviceNotificationsDenied : .deviceNotificationsGranted,
                orderingKey: "device:" + device.id,
                data: NotificationEventData(
                    deviceID: device.id,
                    userID: device.userID,
                    state: request.permission.rawValue,
                    at: now
                ),
                at: now
            )
        }
        let report = PermissionReport(deviceID: device.id, permission: request.permission, at: now, events: events)
        let change = RelayChange(
            writes: [.setNotificationPermission(report)],
            effectsWhenApplied: (events.isEmpty ? [] : [.wakeWebhooks]) + [
                .log(
                    "device notification permission changed",
                    ["device": device.id, "permission": request.permission.rawValue]
                )
            ],
            refusalWhenStale: RelayError.notFound.with(detail: "no device \(device.id)")
        )
        let answer = PermissionAnswer(
            changed: NotificationPermissionView(deviceID: device.id, permission: request.permission, updatedAt: now),
            // The device had this permission already: it stays as it was reported then.
            unchanged: NotificationPermissionView(
                deviceID: device.id,
                permission: request.permission,
                updatedAt: device.notificationPermissionAt ?? device.createdAt
            )
        )
        return Planned(change: change, answer: answer)
    }
}

/// What a permission report answers: one view when it changed the permission, another when the
/// device had it already (`ChangeOutcome.duplicate`).
struct PermissionAnswer: Sendable, Equatable {
    var changed: NotificationPermissionView
    var unchanged: NotificationPermissionView
}

/// The relay's half of a device's key agreement, made for one activation: randomness and the
/// master key's seal, which the planner does not make but decides with.
struct ActivationKeys: Sendable {
    var deviceID: String
    var keyID: String
    var relayPublicKey: PublicKey
    var sealedRelaySecretKey: [UInt8]
    var sealedSessionKeys: [UInt8]
    var credential: DeviceCredential
}
