import Foundation
public import HeraldCrypto
public import HeraldRelayAPI
public import HeraldStore
public import Logging
import Metrics
import Synchronization

/// The relay: activation with key agreement, tokens, presence, and ingest of messages and calls
/// into the durable outbox.
///
/// Transport-free: the HTTP API calls these methods after authenticating the caller. Every ingest
/// returns only after the store committed it; `onAccepted` then tells the dispatcher.
public final class Relay: Sendable {
    let store: any HeraldStore
    let configuration: RelayConfiguration
    let masterKey: MasterKey
    public let logger: Logger
    let now: @Sendable () -> Int64
    /// Waits until `now` reaches a time (milliseconds since the epoch): the chat timers' wait.
    let sleep: @Sendable (_ until: Int64) async throws -> Void
    private let onAccepted: @Sendable () -> Void
    private let onAppSaved: @Sendable (AppRecord) -> Void
    private let appCache = Mutex<[String: AppRecord]>([:])
    /// First pushes waiting for their delay, by device and chat.
    let chatTimers = Mutex<[String: Task<Void, Never>]>([:])
    /// The live channels of apps in the foreground.
    public let live: LiveChannels
    private let metrics = RelayMetrics()

    /// - Parameters:
    ///   - now: the clock, in milliseconds since the epoch.
    ///   - sleep: waits until `now` reads at least the given time, throwing when the task is
    ///     cancelled; the chat delays and the live channels' acknowledgement timeouts wait with it.
    ///     `nil` sleeps in real time until `now` reaches it. Tests pass a clock they can advance.
    ///   - onAccepted: called after each ingest that queued pushes (wakes the dispatcher).
    ///   - onAppSaved: called after an app was added or changed (say, to register it with a sandbox).
    public init(
        configuration: RelayConfiguration = RelayConfiguration(),
        store: any HeraldStore,
        masterKey: MasterKey,
        logger: Logger,
        now: @escaping @Sendable () -> Int64 = RelayClock.now,
        sleep: (@Sendable (_ until: Int64) async throws -> Void)? = nil,
        onAccepted: @escaping @Sendable () -> Void = {},
        onAppSaved: @escaping @Sendable (AppRecord) -> Void = { _ in },
        live: LiveChannels = LiveChannels()
    ) {
        self.onAppSaved = onAppSaved
        self.live = live
        self.configuration = configuration
        self.store = store
        self.masterKey = masterKey
        self.logger = logger
        self.now = now
        let sleep = sleep ?? { deadline in try await RelayClock.sleep(until: deadline, now: now) }
        self.sleep = sleep
        self.onAccepted = onAccepted
        live.attach(now: now, sleep: sleep) { [weak self] deviceID, messageID in
            await self?.pushAfterLiveDelivery(messageID: messageID, deviceID: deviceID)
        }
    }

    // MARK: Apps

    /// Adds or replaces an app.
    public func saveApp(_ app: AppRecord) async throws(RelayError) {
        try check(app.id, "id", pattern: .bundleID)
        try check(app.teamID, "team_id", pattern: .identifier)
        guard (1...AppRecord.maximumMessageTTL).contains(app.messageTTL) else {
            throw .invalidField("message_ttl", "must be between 1 and \(AppRecord.maximumMessageTTL) seconds (30 days)")
        }
        guard app.callTTL > 0, app.callTTL <= 3600 else {
            throw .invalidField("call_ttl", "must be between 1 and 3600 seconds")
        }
        try checkText(app.alertTitle, "alert_title")
        try checkText(app.alertBody, "alert_body")
        try await storing { try await self.store.saveApp(app) }
        appCache.withLock { $0[app.id] = app }
        onAppSaved(app)
    }

    /// Every registered app.
    public func apps() async throws(RelayError) -> [AppRecord] {
        try await storing { try await self.store.apps() }
    }

    /// How many pushes are in each state, and how many devices are stored: what `/health` shows.
    public func counts() async throws(RelayError) -> (outbox: OutboxCounts, devices: Int) {
        try await storing { (try await self.store.outboxCounts(), try await self.store.deviceCount()) }
    }

    func app(id: String) async throws(RelayError) -> AppRecord? {
        if let cached = appCache.withLock({ $0[id] }) { return cached }
        let app = try await storing { try await self.store.app(id: id) }
        if let app { appCache.withLock { $0[id] = app } }
        return app
    }

    // MARK: Devices

    /// Activates a device (or re-activates it with new keys, when `deviceID` is set).
    public func activate(_ request: ActivationRequest) async throws(RelayError) -> ActivationResponse {
        try check(request.userID, "user_id", pattern: .identifier)
        try check(request.app, "app", pattern: .bundleID)
        guard let app = try await app(id: request.app) else {
            throw .invalidField("app", "names no app registered with the relay")
        }
        let devicePublicKey: PublicKey
        do {
            devicePublicKey = try PublicKey(base64: request.publicKey)
        } catch {
            throw .invalidField("public_key", "must be a 32-byte crypto_kx public key in base64")
        }
        try checkToken(request.messagingToken, "messaging_token", platform: request.platform)
        try checkToken(request.voipToken, "voip_token", platform: request.platform)
        if request.platform == .android, request.voipToken != nil {
            throw .invalidField("voip_token", "exists on iOS only (PushKit)")
        }

        let time = now()
        var previous: DeviceRecord?
        let deviceID: String
        if let existing = request.deviceID {
            guard let found = try await storing({ try await self.store.device(id: existing) }) else {
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
            sealedRelaySecretKey: masterKey.seal(relayKeys.secretKey, context: Self.secretKeyContext(deviceID)),
            sealedSessionKeys: masterKey.seal(sessionBytes, context: Self.sessionContext(deviceID)),
            credentialHash: credential.hash,
            tokenDeadReason: nil,
            createdAt: previous?.createdAt ?? time,
            updatedAt: time
        )
        try await storing { try await self.store.saveDevice(device) }
        metrics.activations.increment()
        logger.info(
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

    /// The device a credential belongs to; `unauthorized` for any credential that does not match.
    public func authenticateDevice(credential text: String) async throws(RelayError) -> DeviceRecord {
        guard let credential = DeviceCredential(presented: text) else { throw .unauthorized }
        guard let device = try await storing({ try await self.store.device(id: credential.deviceID) }),
            credential.matches(device.credentialHash)
        else { throw RelayError.unauthorized.with(detail: "the device credential is not valid") }
        return device
    }

    public func device(id: String) async throws(RelayError) -> DeviceView {
        guard let device = try await storing({ try await self.store.device(id: id) }) else {
            throw RelayError.notFound.with(detail: "no device \(id)")
        }
        return DeviceView(device)
    }

    /// Sets late or refreshed tokens; a token another device had is taken from it.
    public func updateTokens(deviceID: String, _ request: TokenUpdateRequest) async throws(RelayError) -> DeviceView {
        guard request.messagingToken != nil || request.voipToken != nil else {
            throw .invalidField("messaging_token", "or 'voip_token' must be given")
        }
        guard let current = try await storing({ try await self.store.device(id: deviceID) }) else {
            throw RelayError.notFound.with(detail: "no device \(deviceID)")
        }
        if request.messagingToken?.isEmpty == false {
            try checkToken(request.messagingToken, "messaging_token", platform: current.platform)
        }
        if request.voipToken?.isEmpty == false {
            guard current.platform == .ios else { throw .invalidField("voip_token", "exists on iOS only (PushKit)") }
            try checkToken(request.voipToken, "voip_token", platform: current.platform)
        }
        let time = now()
        guard
            let updated = try await storing({
                try await self.store.updateTokens(
                    deviceID: deviceID,
                    messaging: request.messagingToken,
                    voip: request.voipToken,
                    now: time
                )
            })
        else { throw RelayError.notFound.with(detail: "no device \(deviceID)") }
        logger.info("device tokens updated", metadata: ["device": "\(deviceID)"])
        return DeviceView(updated)
    }

    /// Logout: the device's tokens, keys, credential and presence are gone.
    public func deactivate(deviceID: String) async throws(RelayError) {
        guard try await storing({ try await self.store.deleteDevice(id: deviceID) }) else {
            throw RelayError.notFound.with(detail: "no device \(deviceID)")
        }
        logger.info("device deactivated", metadata: ["device": "\(deviceID)"])
    }

    // MARK: Presence

    /// Records a heartbeat.
    public func heartbeat(device: DeviceRecord, _ request: HeartbeatRequest) async throws(RelayError) -> PresenceView {
        let ttl = request.ttl ?? configuration.defaultPresenceTTL
        guard (1...configuration.maximumPresenceTTL).contains(ttl) else {
            throw .invalidField("ttl", "must be between 1 and \(configuration.maximumPresenceTTL) seconds")
        }
        if let conversation = request.conversation { try check(conversation, "conversation", pattern: .identifier) }
        let time = now()
        let record = PresenceRecord(
            deviceID: device.id,
            userID: device.userID,
            conversation: request.conversation,
            state: request.state,
            updatedAt: time,
            expiresAt: time + Int64(ttl) * 1000
        )
        try await storing { try await self.store.savePresence(record) }
        return PresenceView(
            deviceID: device.id,
            state: record.state,
            conversation: record.conversation,
            expiresAt: record.expiresAt
        )
    }

    // MARK: Helpers

    static func secretKeyContext(_ deviceID: String) -> String { "herald-relay-secret-key:" + deviceID }
    static func sessionContext(_ deviceID: String) -> String { "herald-relay-session-keys:" + deviceID }
    static func messageContext(_ messageID: String) -> String { "herald-message-text:" + messageID }

    /// The sealer for a device, from its stored session keys.
    func sealer(for device: DeviceRecord) throws(RelayError) -> EnvelopeSealer {
        guard let keyID = KeyID(hex: device.keyID) else {
            throw RelayError.unavailable.with(detail: "device \(device.id) has an unreadable key id")
        }
        do {
            let bytes = try masterKey.open(device.sealedSessionKeys, context: Self.sessionContext(device.id))
                .copyBytes()
            guard bytes.count == 64 else { throw HeraldCryptoError.invalidKey }
            let keys = try SessionKeys(
                receive: SecureBytes(copying: bytes[0..<32]),
                transmit: SecureBytes(copying: bytes[32..<64]),
                keyID: keyID
            )
            return EnvelopeSealer(sessionKeys: keys)
        } catch {
            // A wrong master key, or a damaged row: the operator must know, the caller must not
            // see details.
            logger.error("cannot open a device's session keys", metadata: ["device": "\(device.id)"])
            throw RelayError.unavailable.with(detail: "the relay cannot use this device's keys")
        }
    }

    func storing<T: Sendable>(_ work: @Sendable () async throws -> T) async throws(RelayError) -> T {
        do {
            return try await work()
        } catch {
            logger.error("store failure", metadata: ["error": "\(error)"])
            throw RelayError.unavailable
        }
    }

    func accepted() { onAccepted() }
    var relayMetrics: RelayMetrics { metrics }
}

/// The relay's counters, through swift-metrics.
struct RelayMetrics: Sendable {
    let activations = Counter(label: "herald_relay_activations_total")
    let messages = Counter(label: "herald_relay_messages_accepted_total")
    let calls = Counter(label: "herald_relay_calls_accepted_total")
    let duplicates = Counter(label: "herald_relay_duplicate_ingests_total")
    let queued = Counter(label: "herald_relay_pushes_queued_total")
    let skipped = Counter(label: "herald_relay_pushes_skipped_total")
}

/// The wall clock the relay uses by default.
public enum RelayClock {
    /// Milliseconds since the Unix epoch.
    @Sendable public static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// Sleeps in real time until `now` reads at least `deadline`; throws `CancellationError`
    /// when the task is cancelled.
    public static func sleep(until deadline: Int64, now: @Sendable () -> Int64 = RelayClock.now) async throws {
        while case let remaining = deadline - now(), remaining > 0 {
            try await Task.sleep(for: .milliseconds(remaining))
        }
        try Task.checkCancellation()
    }
}
