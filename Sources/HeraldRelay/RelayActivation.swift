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
    /// The rules; this part reads what they need and commits what they decide.
    let planner: DevicePlanner

    init(context: RelayContext) {
        self.context = context
        self.planner = DevicePlanner(configuration: context.configuration)
    }

    // MARK: Apps

    /// Adds or replaces an app, with its webhook when `webhook` is given (without, it has none):
    /// the secret is kept sealed with the master key.
    /// Returns the app as saved.
    @discardableResult
    public func saveApp(_ app: AppRecord, webhook: WebhookSettings? = nil) async throws(RelayError) -> AppRecord {
        try planner.checkApp(app)
        let sealed = try webhook.map { settings throws(RelayError) in try context.sealedWebhook(settings, appID: app.id)
        }
        let planned = planner.saveApp(app, webhook: sealed)
        try await context.commit(planned.change)
        return planned.answer
    }

    /// Every registered app.
    public func apps() async throws(RelayError) -> [AppRecord] {
        try await context.storing { try await $0.apps() }
    }

    /// What a browser subscribes with for `appID` (`PushManager.subscribe`'s
    /// `applicationServerKey`): the VAPID key named after the app, else the default one.
    public func webPush(app appID: String) async throws(RelayError) -> WebPushAppView {
        guard try await context.app(id: appID) != nil else {
            throw RelayError.notFound.with(detail: "no app \(appID)")
        }
        let keys = context.configuration.fleet.applicationServerKeys
        guard let name = keys[appID] != nil ? appID : keys["default"] != nil ? "default" : nil, let key = keys[name]
        else {
            throw RelayError.notFound.with(detail: "no VAPID key is configured for app \(appID) (docs/webpush.md)")
        }
        return WebPushAppView(app: appID, vapidKey: name, applicationServerKey: key)
    }

    // MARK: Devices

    /// Activates a device (or re-activates it with new keys, when `deviceID` is set).
    public func activate(_ request: ActivationRequest) async throws(RelayError) -> ActivationResponse {
        try planner.checkActivationIDs(request)
        let stored = try await context.app(id: request.app)
        var previous: DeviceRecord?
        if let id = request.deviceID { previous = try await device(record: id) }
        let (app, devicePublicKey, subscription) = try planner.admitActivation(request, app: stored, previous: previous)
        let keys = try makeKeys(
            deviceID: request.deviceID ?? UUID().uuidString.lowercased(),
            devicePublicKey: devicePublicKey
        )
        let planned = planner.activation(
            request,
            app: app,
            previous: previous,
            devicePublicKey: devicePublicKey,
            keys: keys,
            subscription: subscription,
            now: context.clock.now()
        )
        try await context.commit(planned.change)
        return planned.answer
    }

    /// The relay's half of a new key agreement with a device, sealed with the master key.
    private func makeKeys(deviceID: String, devicePublicKey: PublicKey) throws(RelayError) -> ActivationKeys {
        let relayKeys = KeyPair.generate()
        let session: SessionKeys
        do {
            session = try KeyExchange.relaySessionKeys(relay: relayKeys, device: devicePublicKey)
        } catch {
            throw .invalidField("public_key", "is not a usable key (the agreement failed)")
        }
        let sessionBytes = SecureBytes(copying: session.receive.copyBytes() + session.transmit.copyBytes())
        return ActivationKeys(
            deviceID: deviceID,
            keyID: session.keyID.hex,
            relayPublicKey: relayKeys.publicKey,
            sealedRelaySecretKey: context.masterKey.seal(
                relayKeys.secretKey,
                context: RelayContext.secretKeyContext(deviceID)
            ),
            sealedSessionKeys: context.masterKey.seal(sessionBytes, context: RelayContext.sessionContext(deviceID)),
            credential: DeviceCredential.make(deviceID: deviceID)
        )
    }

    /// A device as stored, or `nil`.
    private func device(record id: String) async throws(RelayError) -> DeviceRecord? {
        try await context.storing { try await $0.device(id: id) }
    }

    /// The device a credential belongs to; `unauthorized` for any credential that does not match.
    public func authenticateDevice(credential text: String) async throws(RelayError) -> DeviceRecord {
        guard let credential = DeviceCredential(presented: text) else { throw .unauthorized }
        guard let device = try await device(record: credential.deviceID),
            credential.matches(device.credentialHash)
        else { throw RelayError.unauthorized.with(detail: "the device credential is not valid") }
        return device
    }

    public func device(id: String) async throws(RelayError) -> DeviceView {
        guard let device = try await device(record: id) else {
            throw RelayError.notFound.with(detail: "no device \(id)")
        }
        var view = DeviceView(device)
        view.unreportedCalls = try await context.storing { try await $0.unreportedCalls(deviceID: id) }
        return view
    }

    /// The app of a device; `nil` when there is no such device (any more).
    public func deviceApp(id: String) async throws(RelayError) -> String? {
        try await device(record: id)?.appID
    }

    /// Sets late or refreshed tokens; a token another device had is taken from it.
    public func updateTokens(deviceID: String, _ request: TokenUpdateRequest) async throws(RelayError) -> DeviceView {
        let current =
            request.messagingToken == nil && request.voipToken == nil ? nil : try await device(record: deviceID)
        let planned = try planner.tokenUpdate(request, deviceID: deviceID, current: current, now: context.clock.now())
        try await context.commit(planned.change)
        return planned.answer
    }

    /// Logout: the device's tokens, keys, credential and presence are gone.
    public func deactivate(deviceID: String) async throws(RelayError) {
        try await context.commit(planner.deactivation(deviceID: deviceID))
    }

    // MARK: Presence

    /// Records a heartbeat.
    public func heartbeat(device: DeviceRecord, _ request: HeartbeatRequest) async throws(RelayError) -> PresenceView {
        let planned = try planner.heartbeat(device: device, request, now: context.clock.now())
        try await context.commit(planned.change)
        return planned.answer
    }
}
