import Crypto
import Foundation
import HeraldAPNsCore
import Synchronization

/// The sandbox's state and rules: apps, provider keys, service accounts and access tokens, devices
/// and tokens, stored notifications and FCM messages, faults and the inspection logs. Transports
/// (the APNs and FCM listeners, the control API) call into it.
///
/// The APNs listener calls `handle(_:connection:)` on NIO event loops for every request, so the
/// state sits behind one `Mutex` rather than in an actor: a lock held for a few microseconds
/// costs less than an executor hop per push, and nothing inside the lock suspends.
public final class SandboxCore: Sendable {
    let configuration: SandboxConfiguration
    let state: Mutex<State>
    let clock = ContinuousClock()

    /// A sandbox with the configuration's apps, keys and service accounts registered.
    public init(configuration: SandboxConfiguration) throws {
        self.configuration = configuration
        var initial = State()
        initial.inspection = RingBuffer(capacity: max(1, configuration.inspectionCapacity))
        initial.fcmInspection = RingBuffer(capacity: max(1, configuration.inspectionCapacity))
        for app in configuration.apps { initial.apps[app.bundleID] = app.teamID }
        for key in configuration.keys { initial.keys[key.keyID] = try RegisteredKey(key) }
        for account in configuration.serviceAccounts {
            initial.serviceAccounts[account.privateKeyID] = try RegisteredServiceAccount(account)
        }
        state = Mutex(initial)
    }

    // MARK: - Apps and keys

    /// Registers (or re-registers) an app.
    public func register(app: SandboxApp) throws(SandboxError) {
        guard !app.bundleID.isEmpty, !app.teamID.isEmpty else {
            throw .invalidRequest("bundle_id and team_id must not be empty")
        }
        state.withLock { $0.apps[app.bundleID] = app.teamID }
    }

    /// Registers (or replaces) a provider key; its PEM must be a P-256 public key.
    public func register(key: SandboxKey) throws(SandboxError) {
        let registered = try RegisteredKey(key)
        state.withLock {
            $0.keys[key.keyID] = registered
            // Tokens verified with an older version of this key must be checked again.
            $0.providerTokens.removeAll()
        }
    }

    /// Revokes a key: tokens it signed get 403 Forbidden from now on.
    public func revoke(keyID: String) throws(SandboxError) {
        try state.withLock { (state) throws(SandboxError) in
            guard state.keys[keyID] != nil else { throw .unknownKey(keyID) }
            state.keys[keyID]?.revoked = true
            state.providerTokens.removeAll()
        }
    }

    /// The registered apps.
    public var apps: [SandboxApp] {
        state.withLock { $0.apps.map { SandboxApp(bundleID: $0.key, teamID: $0.value) } }
            .sorted { $0.bundleID < $1.bundleID }
    }

    // MARK: - Devices and tokens

    /// Registers an emulated device and issues its tokens, which the device receives after the
    /// given delays (to exercise late-token handling).
    ///
    /// An iOS device is for a registered app (`bundleID`) and gets an APNs messaging token and a
    /// VoIP token. An Android device gets one FCM registration token (its messaging token) for
    /// `projectID`, which defaults to the project of the registered service accounts when they
    /// all share one; `bundleID` is then its package name and needs no registration.
    public func registerDevice(
        bundleID: String,
        messagingTokenDelay: Duration = .zero,
        voipTokenDelay: Duration = .zero,
        platform: SandboxPlatform = .ios,
        projectID: String? = nil
    ) throws(SandboxError) -> SandboxDevice {
        let now = clock.now
        return try state.withLock { (state) throws(SandboxError) in
            switch platform {
            case .ios:
                guard projectID == nil else {
                    throw .invalidRequest("project_id is for Android devices; an iOS device gets APNs tokens")
                }
                guard state.apps[bundleID] != nil else { throw .unknownApp(bundleID) }
                let device = DeviceRecord(
                    id: "dev-" + Self.randomHex(bytes: 8),
                    bundleID: bundleID,
                    platform: .ios,
                    projectID: nil,
                    messagingToken: Self.randomHex(bytes: 32),
                    voipToken: Self.randomHex(bytes: 32),
                    messagingReadyAt: now + messagingTokenDelay,
                    voipReadyAt: now + voipTokenDelay
                )
                state.devices[device.id] = device
                state.tokens[device.messagingToken] = TokenRecord(
                    deviceID: device.id,
                    topic: bundleID,
                    kind: .messaging
                )
                if let voipToken = device.voipToken {
                    state.tokens[voipToken] = TokenRecord(deviceID: device.id, topic: bundleID + ".voip", kind: .voip)
                }
                return state.view(of: device, now: now)
            case .android:
                guard !bundleID.isEmpty else { throw .invalidRequest("bundle_id (the package name) must not be empty") }
                let project = try state.projectForNewDevice(projectID)
                let device = DeviceRecord(
                    id: "dev-" + Self.randomHex(bytes: 8),
                    bundleID: bundleID,
                    platform: .android,
                    projectID: project,
                    messagingToken: Self.registrationToken(),
                    voipToken: nil,
                    messagingReadyAt: now + messagingTokenDelay,
                    voipReadyAt: now
                )
                state.devices[device.id] = device
                state.fcmTokens[device.messagingToken] = FCMTokenRecord(deviceID: device.id, projectID: project)
                return state.view(of: device, now: now)
            }
        }
    }

    /// A device as the control API shows it: tokens appear only once their delay has passed.
    public func device(id: String) throws(SandboxError) -> SandboxDevice {
        let now = clock.now
        return try state.withLock { (state) throws(SandboxError) in
            guard let device = state.devices[id] else { throw .unknownDevice(id) }
            return state.view(of: device, now: now)
        }
    }

    /// Uninstalls the app from a device: its tokens answer 410 Unregistered (APNs, with this
    /// moment as the timestamp) or 404 UNREGISTERED (FCM) from now on, and its connection and
    /// stored notifications go.
    public func uninstall(deviceID: String) throws(SandboxError) {
        let timestamp = Self.epochMilliseconds()
        let subscriber = try state.withLock { (state) throws(SandboxError) -> Subscriber? in
            guard let device = state.devices[deviceID] else { throw .unknownDevice(deviceID) }
            switch device.platform {
            case .ios:
                for token in [device.messagingToken] + (device.voipToken.map { [$0] } ?? [])
                where state.tokens[token]?.state == .active {
                    state.tokens[token]?.state = .unregistered(at: timestamp)
                }
            case .android:
                if state.fcmTokens[device.messagingToken]?.state == .active {
                    state.fcmTokens[device.messagingToken]?.state = .unregistered(at: timestamp)
                }
            }
            state.pending = state.pending.filter { $0.key.deviceID != deviceID }
            state.fcmPending[deviceID] = nil
            return state.subscribers.removeValue(forKey: deviceID)
        }
        subscriber?.continuation.finish()
    }

    /// Marks one token expired: APNs pushes to it answer 410 ExpiredToken, FCM sends 404
    /// UNREGISTERED.
    public func expire(token: String) throws(SandboxError) {
        let timestamp = Self.epochMilliseconds()
        try state.withLock { (state) throws(SandboxError) in
            // Registration tokens are case-sensitive; APNs device tokens are not.
            if state.fcmTokens[token] != nil {
                state.fcmTokens[token]?.state = .expired(at: timestamp)
                return
            }
            guard state.tokens[token.lowercased()] != nil else { throw .unknownToken(token) }
            state.tokens[token.lowercased()]?.state = .expired(at: timestamp)
        }
    }

    /// Throws unless the device exists and its app is installed: checked before a WebSocket
    /// upgrade, so a refusal is an HTTP answer and not a socket that closes at once.
    public func checkConnectable(deviceID: String) throws(SandboxError) {
        try state.withLock { (state) throws(SandboxError) in try state.checkConnectable(deviceID) }
    }

    /// Opens the device's connection: the returned stream yields its tokens as they become
    /// available, the notification (iOS) or FCM messages (Android) stored while it was offline,
    /// then every new one, in order. A second connection for the same device replaces the first.
    public func connect(deviceID: String) throws(SandboxError) -> AsyncStream<SandboxDeviceEvent> {
        let now = clock.now
        let nowMilliseconds = Self.epochMilliseconds()
        let (stream, continuation) = AsyncStream.makeStream(
            of: SandboxDeviceEvent.self,
            bufferingPolicy: .bufferingOldest(10_000)
        )
        let (id, replaced, later) = try state.withLock {
            (state) throws(SandboxError) -> (UInt64, Subscriber?, [TokenReveal]) in
            try state.checkConnectable(deviceID)
            let device = state.devices[deviceID]!
            state.nextSubscriberID += 1
            let replaced = state.subscribers.updateValue(
                Subscriber(id: state.nextSubscriberID, continuation: continuation),
                forKey: deviceID
            )
            var later: [TokenReveal] = []
            var tokens = [(SandboxTokenKind.messaging, device.messagingToken, device.messagingReadyAt)]
            if let voipToken = device.voipToken { tokens.append((.voip, voipToken, device.voipReadyAt)) }
            for (kind, token, readyAt) in tokens {
                if readyAt <= now {
                    continuation.yield(.token(kind: kind, token: token))
                } else {
                    later.append((kind, token, readyAt))
                }
            }
            for key in state.pending.keys where key.deviceID == deviceID {
                if let stored = state.pending.removeValue(forKey: key), stored.expiresAt > nowMilliseconds {
                    continuation.yield(.notification(stored.notification))
                }
            }
            for stored in state.fcmPending.removeValue(forKey: deviceID) ?? [] where stored.expiresAt > nowMilliseconds
            {
                continuation.yield(.fcmMessage(stored.message))
            }
            return (state.nextSubscriberID, replaced, later)
        }
        replaced?.continuation.finish()
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { state in
                if state.subscribers[deviceID]?.id == id { state.subscribers[deviceID] = nil }
            }
        }
        if !later.isEmpty {
            // onTermination has one slot: chain the reveal cancellation into the removal above.
            let removal = continuation.onTermination
            let clock = clock
            let reveal = Task {
                for (kind, token, readyAt) in later.sorted(by: { $0.2 < $1.2 }) {
                    try await clock.sleep(until: readyAt)
                    continuation.yield(.token(kind: kind, token: token))
                }
            }
            continuation.onTermination = { reason in
                reveal.cancel()
                removal?(reason)
            }
        }
        return stream
    }

    // MARK: - Faults

    /// Queues a fault for the next matching requests.
    public func inject(_ fault: SandboxFault) throws(SandboxError) {
        guard fault.count > 0 else { throw .invalidRequest("count must be at least 1") }
        if fault.action == .respond, fault.reason == nil, fault.status == nil {
            throw .invalidRequest("a respond fault needs a reason, a status, or both")
        }
        if let status = fault.status, !(400...599).contains(status) {
            throw .invalidRequest("status must be an error status, between 400 and 599")
        }
        var fault = fault
        fault.token = fault.token?.lowercased()
        state.withLock { [fault] in $0.faults.append(fault) }
    }

    /// Adds latency to every answer from now on; `.zero` removes it.
    public func setLatency(_ latency: Duration) {
        state.withLock { $0.latency = latency }
    }

    /// Removes every queued fault (APNs and FCM) and the latency.
    public func clearFaults() {
        state.withLock {
            $0.faults.removeAll()
            $0.fcmFaults.removeAll()
            $0.latency = .zero
        }
    }

    // MARK: - Inspection

    /// The inspection log, oldest first, optionally only for one device token.
    public func inspection(token: String? = nil, limit: Int? = nil) -> [SandboxInspectionRecord] {
        let limit = limit.map { max(0, $0) }
        let records = state.withLock { $0.inspection.elements }.map(\.record)
        let filtered = token.map { token in records.filter { $0.token == token.lowercased() } } ?? records
        return limit.map { Array(filtered.suffix($0)) } ?? filtered
    }

    /// How many provider tokens have been parsed and checked (not served from the cache).
    public var providerTokenVerifications: Int {
        state.withLock { $0.signatureVerifications }
    }

    /// Forgets the inspection log.
    public func clearInspection() {
        state.withLock { $0.inspection.removeAll() }
    }

    /// Every inspection record made from now on, as it is made. For tests: a signal to wait on.
    public func inspectionUpdates() -> AsyncStream<SandboxInspectionRecord> {
        observe(\.inspectionObservers)
    }

    /// A stream of what is added to the observers at `observers` from now on.
    func observe<Record: Sendable>(
        _ observers: WritableKeyPath<State, [UInt64: AsyncStream<Record>.Continuation]> & Sendable
    ) -> AsyncStream<Record> {
        let (stream, continuation) = AsyncStream.makeStream(of: Record.self, bufferingPolicy: .bufferingOldest(100_000))
        let id = state.withLock { state in
            state.nextSubscriberID += 1
            state[keyPath: observers][state.nextSubscriberID] = continuation
            return state.nextSubscriberID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0[keyPath: observers].removeValue(forKey: id) }
        }
        return stream
    }

    // MARK: - Shutdown

    /// From now on every request gets 503 Shutdown.
    func beginShutdown() {
        state.withLock { $0.shuttingDown = true }
    }

    /// Ends every device connection and inspection stream.
    func finishStreams() {
        let (subscribers, observers, fcmObservers) = state.withLock { state in
            defer {
                state.subscribers.removeAll()
                state.inspectionObservers.removeAll()
                state.fcmInspectionObservers.removeAll()
            }
            return (
                Array(state.subscribers.values), Array(state.inspectionObservers.values),
                Array(state.fcmInspectionObservers.values)
            )
        }
        for subscriber in subscribers { subscriber.continuation.finish() }
        for observer in observers { observer.finish() }
        for observer in fcmObservers { observer.finish() }
    }

    // MARK: - Helpers

    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes * 2)
        for _ in 0..<bytes {
            let byte = UInt8.random(in: 0...255, using: &generator)
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func epochMilliseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }
}

// MARK: - State

extension SandboxCore {
    struct RegisteredKey {
        let teamID: String
        let publicKey: P256.Signing.PublicKey
        let environment: SandboxKey.Environment
        var revoked = false

        init(_ key: SandboxKey) throws(SandboxError) {
            do {
                publicKey = try P256.Signing.PublicKey(pemRepresentation: key.publicKeyPEM)
            } catch {
                throw .invalidKey("public_key_pem is not a P-256 public key in PEM form")
            }
            guard !key.keyID.isEmpty, !key.teamID.isEmpty else {
                throw .invalidKey("key_id and team_id must not be empty")
            }
            teamID = key.teamID
            environment = key.environment
        }
    }

    struct DeviceRecord {
        let id: String
        let bundleID: String
        let platform: SandboxPlatform
        let projectID: String?
        /// The APNs device token (iOS) or the FCM registration token (Android).
        let messagingToken: String
        /// nil for Android.
        let voipToken: String?
        let messagingReadyAt: ContinuousClock.Instant
        let voipReadyAt: ContinuousClock.Instant
    }

    struct TokenRecord {
        enum Status: Equatable {
            case active
            case unregistered(at: Int64)
            case expired(at: Int64)
        }

        let deviceID: String
        let topic: String
        let kind: SandboxTokenKind
        var state: Status = .active
    }

    /// A token handed to a device later, at its retrieval delay.
    typealias TokenReveal = (kind: SandboxTokenKind, token: String, readyAt: ContinuousClock.Instant)

    struct PendingKey: Hashable {
        let deviceID: String
        let topic: String
    }

    struct Pending {
        let notification: SandboxNotification
        let expiresAt: Int64
    }

    struct Subscriber {
        let id: UInt64
        let continuation: AsyncStream<SandboxDeviceEvent>.Continuation
    }

    /// What a provider token turned out to be, cached per distinct token text.
    enum ProviderTokenVerdict {
        case valid(keyID: String, teamID: String, issuedAt: Int64)
        case invalid(APNsReason, keyID: String?, teamID: String?)
    }

    /// What the inspection log keeps per request: the request as read plus what was done.
    struct InspectionEntry {
        enum Delivery: String {
            case delivered
            case stored
            case discardedTryOnce = "discarded: device offline and apns-expiration is 0"
            case discardedExpired = "discarded: expired while the device was offline"
        }

        let request: SandboxAPNsRequest
        let receivedAt: Int64
        let apnsID: String
        var sequence = 0
        var keyID: String?
        var teamID: String?
        var status = 0
        var reason: APNsReason?
        var outcome = "accepted"
        var delivery: Delivery?

        init(request: SandboxAPNsRequest, receivedAt: Int64, apnsID: String) {
            self.request = request
            self.receivedAt = receivedAt
            self.apnsID = apnsID
        }

        var record: SandboxInspectionRecord {
            SandboxInspectionRecord(
                sequence: sequence,
                receivedAt: receivedAt,
                method: request.method ?? "",
                path: request.path ?? "",
                token: SandboxCore.token(inPath: request.path)?.lowercased(),
                topic: request.topic,
                pushType: request.pushType,
                priority: request.priority,
                expiration: request.expiration,
                collapseID: request.collapseID,
                apnsID: apnsID,
                keyID: keyID,
                teamID: teamID,
                payload: String(decoding: request.body, as: UTF8.self),
                status: status,
                reason: reason?.rawValue,
                outcome: outcome,
                delivery: delivery?.rawValue
            )
        }
    }

    struct TokenGeneration {
        let token: String
        let since: ContinuousClock.Instant
    }

    struct RateWindow {
        var start: ContinuousClock.Instant
        var count: Int
    }

    struct State {
        var apps: [String: String] = [:]
        var keys: [String: RegisteredKey] = [:]
        var devices: [String: DeviceRecord] = [:]
        var tokens: [String: TokenRecord] = [:]
        var pending: [PendingKey: Pending] = [:]
        var subscribers: [String: Subscriber] = [:]
        var inspectionObservers: [UInt64: AsyncStream<SandboxInspectionRecord>.Continuation] = [:]
        var nextSubscriberID: UInt64 = 0
        var providerTokens: [String: ProviderTokenVerdict] = [:]
        var tokenGenerations: [String: TokenGeneration] = [:]
        var rateWindows: [String: RateWindow] = [:]
        var faults: [SandboxFault] = []
        var latency: Duration = .zero
        var serviceAccounts: [String: RegisteredServiceAccount] = [:]
        var accessTokens: [String: AccessTokenRecord] = [:]
        var accessTokenGrants = 0
        var fcmTokens: [String: FCMTokenRecord] = [:]
        var fcmPending: [String: [PendingFCMMessage]] = [:]
        var fcmFaults: [SandboxFCMFault] = []
        var fcmInspection = RingBuffer<SandboxFCMInspectionRecord>(capacity: 1)
        var fcmSequence = 0
        var fcmInspectionObservers: [UInt64: AsyncStream<SandboxFCMInspectionRecord>.Continuation] = [:]
        var inspection = RingBuffer<InspectionEntry>(capacity: 1)
        var sequence = 0
        var shuttingDown = false
        var signatureVerifications = 0
        var random: SplitMix64 = {
            var system = SystemRandomNumberGenerator()
            return SplitMix64(seed: system.next())
        }()

        /// Throws unless `deviceID` exists and its app is installed.
        func checkConnectable(_ deviceID: String) throws(SandboxError) {
            guard let device = devices[deviceID] else { throw .unknownDevice(deviceID) }
            let status =
                switch device.platform {
                case .ios: tokens[device.messagingToken]?.state
                case .android: fcmTokens[device.messagingToken]?.state
                }
            if case .unregistered = status {
                throw .appUninstalled(deviceID)
            }
        }

        func view(of device: DeviceRecord, now: ContinuousClock.Instant) -> SandboxDevice {
            func remaining(_ instant: ContinuousClock.Instant) -> Int64 {
                instant <= now ? 0 : Int64((instant - now) / .milliseconds(1)) + 1
            }
            return SandboxDevice(
                deviceID: device.id,
                bundleID: device.bundleID,
                platform: device.platform,
                projectID: device.projectID,
                messagingToken: device.messagingReadyAt <= now ? device.messagingToken : nil,
                voipToken: device.voipReadyAt <= now ? device.voipToken : nil,
                messagingTokenReadyInMs: remaining(device.messagingReadyAt),
                voipTokenReadyInMs: device.voipToken == nil ? 0 : remaining(device.voipReadyAt),
                connected: subscribers[device.id] != nil
            )
        }
    }

}
