import Foundation
import HeraldCrypto
import HeraldPush
public import HeraldRelayAPI
public import HeraldStore

/// The relay's activation part: apps, device activation with key agreement (and re-activation
/// with new keys), device lookup and credential checks, late or refreshed tokens, logout, and
/// presence heartbeats.
///
/// No state of its own: `saveApp` fills the context's app cache, which every part reads.
public final class RelayActivation: Sendable {
    let context: RelayContext

    init(context: RelayContext) {
        self.context = context
    }

    // MARK: Apps

    /// Adds or replaces an app, with its webhook when `webhook` is given (without, it has none):
    /// the secret is kept sealed with the master key.
    /// Returns the app as saved.
    @discardableResult
    public func saveApp(_ app: AppRecord, webhook: WebhookSettings? = nil) async throws(RelayError) -> AppRecord {
        var app = app
        try context.check(app.id, "id", pattern: .bundleID)
        try context.check(app.teamID, "team_id", pattern: .identifier)
        guard (1...AppRecord.maximumMessageTTL).contains(app.messageTTL) else {
            throw .invalidField("message_ttl", "must be between 1 and \(AppRecord.maximumMessageTTL) seconds (30 days)")
        }
        guard app.callTTL > 0, app.callTTL <= 3600 else {
            throw .invalidField("call_ttl", "must be between 1 and 3600 seconds")
        }
        guard app.messagePriority == 5 || app.messagePriority == 10 else {
            throw .invalidField("message_priority", "must be 5 or 10 (a message push is an alert)")
        }
        if let holdFor = app.holdFor, !(1...UndeliverableConfiguration.maximumHoldFor).contains(holdFor) {
            throw .invalidField(
                "hold_for",
                "must be between 1 and \(UndeliverableConfiguration.maximumHoldFor) seconds (7 days)"
            )
        }
        try context.checkText(app.alertTitle, "alert_title")
        try context.checkText(app.alertBody, "alert_body")
        let fleet = context.configuration.fleet
        if let name = app.apnsKey {
            try context.check(name, "apns_key", pattern: .identifier)
            if let known = fleet.apnsKeys, !known.contains(name) {
                throw .invalidField(
                    "apns_key",
                    "names no configured APNs key (configured: \(known.sorted().joined(separator: ", ")))"
                )
            }
        }
        if let name = app.fcmAccount {
            try context.check(name, "fcm_account", pattern: .identifier)
            if let known = fleet.fcmAccounts, !known.contains(name) {
                throw .invalidField(
                    "fcm_account",
                    "names no configured FCM service account (configured: \(known.sorted().joined(separator: ", ")))"
                )
            }
        }
        app.webhook = nil
        if let webhook { app.webhook = try context.sealedWebhook(webhook, appID: app.id) }
        let saved = app
        try await context.storing { try await $0.saveApp(saved) }
        let readAt = context.now()
        context.appCache.withLock { $0[app.id] = (app, readAt) }
        context.onAppSaved(app)
        return app
    }

    /// Every registered app.
    public func apps() async throws(RelayError) -> [AppRecord] {
        try await context.storing { try await $0.apps() }
    }

    // MARK: Devices

    /// Activates a device (or re-activates it with new keys, when `deviceID` is set).
    public func activate(_ request: ActivationRequest) async throws(RelayError) -> ActivationResponse {
        try context.check(request.userID, "user_id", pattern: .identifier)
        try context.check(request.app, "app", pattern: .bundleID)
        guard let app = try await context.app(id: request.app) else {
            throw .invalidField("app", "names no app registered with the relay")
        }
        let devicePublicKey: PublicKey
        do {
            devicePublicKey = try PublicKey(base64: request.publicKey)
        } catch {
            throw .invalidField("public_key", "must be a 32-byte crypto_kx public key in base64")
        }
        try context.checkToken(request.messagingToken, "messaging_token", platform: request.platform)
        try context.checkToken(request.voipToken, "voip_token", platform: request.platform)
        if request.platform == .android, request.voipToken != nil {
            throw .invalidField("voip_token", "exists on iOS only (PushKit)")
        }
        if request.platform == .android, request.apnsEnvironment != nil {
            throw .invalidField("apns_environment", "is for iOS devices only (APNs)")
        }

        let time = context.now()
        var previous: DeviceRecord?
        let deviceID: String
        if let existing = request.deviceID {
            guard let found = try await context.storing({ try await $0.device(id: existing) }) else {
                throw RelayError.notFound.with(detail: "no device \(existing)")
            }
            guard found.userID == request.userID, found.appID == request.app else {
                throw RelayError.forbidden.with(detail: "device \(existing) belongs to another user or app")
            }
            guard found.platform == request.platform else {
                throw RelayError.invalidField("platform", "cannot change on re-activation; activate a new device")
            }
            previous = found
            deviceID = existing
        } else {
            deviceID = UUID().uuidString.lowercased()
        }

        let relayKeys = KeyPair.generate()
        let session: SessionKeys
        do {
            session = try KeyExchange.relaySessionKeys(relay: relayKeys, device: devicePublicKey)
        } catch {
            throw .invalidField("public_key", "is not a usable key (the agreement failed)")
        }
        let credential = DeviceCredential.make(deviceID: deviceID)
        let sessionBytes = SecureBytes(copying: session.receive.copyBytes() + session.transmit.copyBytes())
        let device = DeviceRecord(
            id: deviceID,
            userID: request.userID,
            appID: app.id,
            platform: request.platform,
            messagingToken: request.messagingToken ?? previous?.messagingToken,
            voipToken: request.voipToken ?? previous?.voipToken,
            keyID: session.keyID.hex,
            previousKeyID: previous?.keyID,
            devicePublicKey: devicePublicKey.bytes,
            relayPublicKey: relayKeys.publicKey.bytes,
            sealedRelaySecretKey: context.masterKey.seal(
                relayKeys.secretKey,
                context: RelayContext.secretKeyContext(deviceID)
            ),
            sealedSessionKeys: context.masterKey.seal(sessionBytes, context: RelayContext.sessionContext(deviceID)),
            credentialHash: credential.hash,
            tokenDeadReason: nil,
            createdAt: previous?.createdAt ?? time,
            updatedAt: time,
            apnsEnvironment: environment(of: request, app: app, previous: previous),
            // A re-activation keeps what the device last reported; a new device starts granted.
            notificationPermission: previous?.notificationPermission ?? .granted,
            notificationPermissionAt: previous?.notificationPermissionAt
        )
        try await context.storing { try await $0.saveDevice(device) }
        context.metrics.activations.increment()
        // After the save: a message held from now on finds the device and is pushed instead.
        await context.releaseHeld(userID: device.userID)
        context.logger.info(
            "device activated",
            metadata: [
                "device": "\(deviceID)", "app": "\(app.id)", "key_id": "\(device.keyID)",
                "rotated": "\(previous != nil)",
            ]
        )
        return ActivationResponse(
            deviceID: deviceID,
            userID: request.userID,
            app: app.id,
            relayPublicKey: relayKeys.publicKey.base64,
            keyID: device.keyID,
            previousKeyID: device.previousKeyID,
            deviceCredential: credential.text,
            contentPolicy: app.contentPolicy
        )
    }

    /// The APNs environment of an activating iOS device: the one it names; on a re-activation
    /// that keeps its tokens, the one it had; else its app's, else the relay's default (none when
    /// the relay does not know the provider's keys: the key's environment then applies).
    private func environment(
        of request: ActivationRequest,
        app: AppRecord,
        previous: DeviceRecord?
    ) -> APNsEnvironment? {
        guard request.platform == .ios else { return nil }
        if let named = request.apnsEnvironment { return named }
        if request.messagingToken == nil, request.voipToken == nil, let kept = previous?.apnsEnvironment { return kept }
        return app.apnsEnvironment ?? context.configuration.fleet.defaultAPNsEnvironment
    }

    /// The device a credential belongs to; `unauthorized` for any credential that does not match.
    public func authenticateDevice(credential text: String) async throws(RelayError) -> DeviceRecord {
        guard let credential = DeviceCredential(presented: text) else { throw .unauthorized }
        guard let device = try await context.storing({ try await $0.device(id: credential.deviceID) }),
            credential.matches(device.credentialHash)
        else { throw RelayError.unauthorized.with(detail: "the device credential is not valid") }
        return device
    }

    public func device(id: String) async throws(RelayError) -> DeviceView {
        guard let device = try await context.storing({ try await $0.device(id: id) }) else {
            throw RelayError.notFound.with(detail: "no device \(id)")
        }
        return DeviceView(device)
    }

    /// The app of a device; `nil` when there is no such device (any more).
    public func deviceApp(id: String) async throws(RelayError) -> String? {
        try await context.storing { try await $0.device(id: id) }?.appID
    }

    /// Sets late or refreshed tokens; a token another device had is taken from it.
    public func updateTokens(deviceID: String, _ request: TokenUpdateRequest) async throws(RelayError) -> DeviceView {
        guard request.messagingToken != nil || request.voipToken != nil else {
            throw .invalidField("messaging_token", "or 'voip_token' must be given")
        }
        guard let current = try await context.storing({ try await $0.device(id: deviceID) }) else {
            throw RelayError.notFound.with(detail: "no device \(deviceID)")
        }
        if request.messagingToken?.isEmpty == false {
            try context.checkToken(request.messagingToken, "messaging_token", platform: current.platform)
        }
        if request.voipToken?.isEmpty == false {
            guard current.platform == .ios else { throw .invalidField("voip_token", "exists on iOS only (PushKit)") }
            try context.checkToken(request.voipToken, "voip_token", platform: current.platform)
        }
        let time = context.now()
        guard
            let updated = try await context.storing({ store in
                try await store.updateTokens(
                    deviceID: deviceID,
                    messaging: request.messagingToken,
                    voip: request.voipToken,
                    now: time
                )
            })
        else { throw RelayError.notFound.with(detail: "no device \(deviceID)") }
        context.logger.info("device tokens updated", metadata: ["device": "\(deviceID)"])
        // A device that activated without a token takes what is held for its user now.
        await context.releaseHeld(userID: updated.userID)
        return DeviceView(updated)
    }

    /// Logout: the device's tokens, keys, credential and presence are gone.
    public func deactivate(deviceID: String) async throws(RelayError) {
        guard try await context.storing({ try await $0.deleteDevice(id: deviceID) }) else {
            throw RelayError.notFound.with(detail: "no device \(deviceID)")
        }
        context.logger.info("device deactivated", metadata: ["device": "\(deviceID)"])
    }

    // MARK: Presence

    /// Records a heartbeat.
    public func heartbeat(device: DeviceRecord, _ request: HeartbeatRequest) async throws(RelayError) -> PresenceView {
        let ttl = request.ttl ?? context.configuration.defaultPresenceTTL
        guard (1...context.configuration.maximumPresenceTTL).contains(ttl) else {
            throw .invalidField("ttl", "must be between 1 and \(context.configuration.maximumPresenceTTL) seconds")
        }
        if let conversation = request.conversation {
            try context.check(conversation, "conversation", pattern: .identifier)
        }
        let time = context.now()
        let record = PresenceRecord(
            deviceID: device.id,
            userID: device.userID,
            conversation: request.conversation,
            state: request.state,
            updatedAt: time,
            expiresAt: time + Int64(ttl) * 1000
        )
        try await context.storing { try await $0.savePresence(record) }
        return PresenceView(
            deviceID: device.id,
            state: record.state,
            conversation: record.conversation,
            expiresAt: record.expiresAt
        )
    }
}
