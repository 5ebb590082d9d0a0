import DequeModule
import HeraldAPNsCore
import Synchronization

/// The state of a token the sandbox issued.
enum TokenState: Equatable, Sendable {
    case active
    /// The app was uninstalled, at this moment (milliseconds since the epoch).
    case unregistered(at: Int64)
    /// Expired through the control API, at this moment (milliseconds since the epoch).
    case expired(at: Int64)
}

/// An APNs device token as the APNs rules need it.
struct APNsTokenRecord: Equatable, Sendable {
    let deviceID: String
    /// The topic it takes pushes for: the bundle id, or the bundle id + `.voip`.
    let topic: String
    let kind: SandboxTokenKind
    var state: TokenState = .active
    /// The environment that issued it: the other one's host answers BadDeviceToken, as Apple's does.
    var environment: APNsEnvironment = .development
}

/// An FCM registration token as the `messages:send` rules need it.
struct FCMTokenRecord: Equatable, Sendable {
    let deviceID: String
    let projectID: String
    var state: TokenState = .active
}

/// What became of a push handed to its device.
enum DeviceDelivery: Equatable, Sendable {
    /// The device is connected and has it.
    case delivered
    /// The device is offline; it gets the push when it connects.
    case stored
    /// The device is offline and the push was not to be kept.
    case notKept
    /// The token stopped being active after the push was checked (an uninstall or an expiry
    /// that won the race): the push must be refused as if it had come later.
    case refused(TokenState)
}

/// A push on its way to a connected device, which gets it at `complete()`.
///
/// The emulators complete it once the push is in the inspection log: whoever sees a push on a
/// device then also finds its record, as when one lock covered both.
struct DeviceHandoff: Sendable {
    private let connection: AsyncStream<SandboxDeviceEvent>.Continuation?
    private let event: SandboxDeviceEvent?

    /// Nothing to hand over: the push was kept, dropped or refused.
    static let none = DeviceHandoff(connection: nil, event: nil)

    init(connection: AsyncStream<SandboxDeviceEvent>.Continuation?, event: SandboxDeviceEvent?) {
        self.connection = connection
        self.event = event
    }

    /// Puts the push on the device's connection.
    func complete() {
        if let connection, let event { connection.yield(event) }
    }
}

/// What the APNs emulator asks of the devices.
protocol APNsDeviceDirectory: Sendable {
    /// The team of a registered app, nil when the app is unknown.
    func team(ofApp bundleID: String) -> String?
    /// An APNs device token the sandbox issued (`token` in lowercase).
    func apnsToken(_ token: String) -> APNsTokenRecord?
    /// Hands an accepted notification to the device its token belongs to, or keeps it (the last
    /// one per topic) until `keepUntil` (milliseconds since the epoch) while the device is
    /// offline; nil keeps nothing. A delivered one reaches the device at `handoff.complete()`.
    func deliver(
        _ notification: SandboxNotification,
        keepUntil: Int64?
    ) -> (delivery: DeviceDelivery, handoff: DeviceHandoff)
}

/// What the FCM emulator asks of the devices.
protocol FCMDeviceDirectory: Sendable {
    /// An FCM registration token the sandbox issued.
    func fcmToken(_ token: String) -> FCMTokenRecord?
    /// Hands an accepted message to the device its token belongs to, or queues it until
    /// `keepUntil` (milliseconds since the epoch) while the device is offline; nil keeps nothing.
    /// A delivered one reaches the device at `handoff.complete()`.
    func deliver(_ message: SandboxFCMMessage, keepUntil: Int64?) -> (delivery: DeviceDelivery, handoff: DeviceHandoff)
}

/// The emulated devices: apps, devices and the tokens issued to them, uninstalls and expiries,
/// device connections, and what is kept for offline devices (the last notification per topic,
/// a queue of FCM messages).
///
/// On the APNs path for every push, so its state sits behind a `Mutex` held for a few
/// microseconds rather than in an actor.
final class DeviceRegistry: Sendable, APNsDeviceDirectory, FCMDeviceDirectory {
    /// How many messages FCM keeps for an offline device; the oldest goes first.
    static let storedMessageLimit = 100

    let state: Mutex<State>
    let clock: SandboxClock
    /// Where apps and devices are kept across restarts (`load()`, `save()`); nil keeps them in
    /// memory only.
    let file: String?
    /// Held while the file is written, so two writes never interleave.
    let fileLock = Mutex(())

    /// A registry that knows `apps` (bundle id and team) and no device yet, on `clock`; with
    /// `file`, `load()` adds what the file holds and every change is written to it.
    init(apps: [SandboxApp] = [], clock: SandboxClock = SandboxClock(), file: String? = nil) {
        self.clock = clock
        self.file = file
        var initial = State()
        for app in apps { initial.apps[app.bundleID] = app.teamID }
        state = Mutex(initial)
    }

    // MARK: - Apps

    /// Registers (or re-registers) an app.
    func register(app: SandboxApp) throws(SandboxError) {
        guard !app.bundleID.isEmpty, !app.teamID.isEmpty else {
            throw .invalidRequest("bundle_id and team_id must not be empty")
        }
        let changed = state.withLock { state in
            defer { state.apps[app.bundleID] = app.teamID }
            return state.apps[app.bundleID] != app.teamID
        }
        if changed { try save(appID: app.bundleID) }
    }

    /// The registered apps, by bundle id.
    var apps: [SandboxApp] {
        state.withLock { $0.apps.map { SandboxApp(bundleID: $0.key, teamID: $0.value) } }
            .sorted { $0.bundleID < $1.bundleID }
    }

    func team(ofApp bundleID: String) -> String? {
        state.withLock { $0.apps[bundleID] }
    }

    // MARK: - Devices and tokens

    /// Registers an emulated device and issues its tokens, which the device receives after the
    /// given delays.
    ///
    /// An iOS device is for a registered app and gets an APNs messaging token and a VoIP token.
    /// An Android device gets one FCM registration token for `projectID`, which defaults to the
    /// one project in `serviceAccountProjects`; its `bundleID` is a package name and needs no
    /// registration.
    func registerDevice(
        bundleID: String,
        messagingTokenDelay: Duration = .zero,
        voipTokenDelay: Duration = .zero,
        platform: SandboxPlatform = .ios,
        projectID: String? = nil,
        apnsEnvironment: APNsEnvironment? = nil,
        serviceAccountProjects: @autoclosure () -> Set<String> = [],
        hmsApps: @autoclosure () -> Set<String> = [],
        subscription: WebSubscriptionRequest = .init()
    ) throws(SandboxError) -> SandboxDevice {
        let now = clock.now
        switch platform {
        case .web:
            return try registerWebDevice(bundleID: bundleID, messagingTokenDelay: messagingTokenDelay, subscription)
        case .ios:
            guard projectID == nil else {
                throw .invalidRequest("project_id is for Android devices; an iOS device gets APNs tokens")
            }
            let environment = apnsEnvironment ?? .development
            var device = DeviceRecord(
                id: "dev-" + RandomText.hex(bytes: 8),
                bundleID: bundleID,
                platform: .ios,
                projectID: nil,
                messagingToken: RandomText.hex(bytes: 32),
                voipToken: RandomText.hex(bytes: 32),
                messagingReadyAt: now + messagingTokenDelay,
                voipReadyAt: now + voipTokenDelay
            )
            device.apnsEnvironment = environment
            let view = try state.withLock { (state) throws(SandboxError) in
                guard state.apps[bundleID] != nil else { throw .unknownApp(bundleID) }
                state.devices[device.id] = device
                state.apnsTokens[device.messagingToken] = APNsTokenRecord(
                    deviceID: device.id,
                    topic: bundleID,
                    kind: .messaging,
                    environment: environment
                )
                if let voipToken = device.voipToken {
                    state.apnsTokens[voipToken] = APNsTokenRecord(
                        deviceID: device.id,
                        topic: bundleID + ".voip",
                        kind: .voip,
                        environment: environment
                    )
                }
                return state.view(of: device, now: now)
            }
            try save(deviceID: device.id)
            return view
        case .android, .huawei:
            // An FCM registration token of a Firebase project, or a Push Kit token of a Huawei app.
            let (group, token) =
                platform == .android
                ? (
                    try Self.project(projectID, serviceAccountProjects: serviceAccountProjects()),
                    RandomText.registrationToken()
                )
                : (try Self.huaweiApp(projectID, registered: hmsApps()), RandomText.pushKitToken())
            return try registerTokenDevice(
                platform,
                bundleID: bundleID,
                group: group,
                token: token,
                readyAt: now + messagingTokenDelay,
                apnsEnvironment: apnsEnvironment
            )
        }
    }

    /// The project of a new Android device: the one asked for, or the service accounts' project
    /// when there is exactly one.
    private static func project(
        _ projectID: String?,
        serviceAccountProjects projects: Set<String>
    ) throws(SandboxError) -> String {
        if let projectID {
            guard !projectID.isEmpty else { throw .invalidRequest("project_id must not be empty") }
            return projectID
        }
        guard projects.count == 1, let project = projects.first else {
            throw .invalidRequest(
                projects.isEmpty
                    ? "project_id is required for an Android device: no service account is registered "
                        + "(POST /sandbox/fcm/service-accounts) to take the project from"
                    : "project_id is required for an Android device: service accounts of \(projects.count) "
                        + "projects are registered (\(projects.sorted().joined(separator: ", ")))"
            )
        }
        return project
    }

    /// A device as the control API shows it: tokens appear only once their delay has passed.
    func device(id: String) throws(SandboxError) -> SandboxDevice {
        let now = clock.now
        return try state.withLock { (state) throws(SandboxError) in
            guard let device = state.devices[id] else { throw .unknownDevice(id) }
            return state.view(of: device, now: now)
        }
    }

    /// Uninstalls the app from a device: its tokens become unregistered (with this moment as the
    /// timestamp), and its connection and what was kept for it go.
    func uninstall(deviceID: String) throws(SandboxError) {
        let timestamp = clock.epochMilliseconds
        let connection = try state.withLock { (state) throws(SandboxError) -> DeviceConnection? in
            guard let device = state.devices[deviceID] else { throw .unknownDevice(deviceID) }
            switch device.platform {
            case .ios:
                for token in [device.messagingToken] + (device.voipToken.map { [$0] } ?? [])
                where state.apnsTokens[token]?.state == .active {
                    state.apnsTokens[token]?.state = .unregistered(at: timestamp)
                }
            case .android, .huawei:
                let tokens = State.tokens(of: device.platform)
                if state[keyPath: tokens][device.messagingToken]?.state == .active {
                    state[keyPath: tokens][device.messagingToken]?.state = .unregistered(at: timestamp)
                }
            case .web:
                if let (id, record) = state.web.record(forToken: device.messagingToken), record.state == .active {
                    state.web.subscriptions[id]?.state = .unregistered(at: timestamp)
                }
                state.web.stored[deviceID] = nil
            }
            state.storedNotifications = state.storedNotifications.filter { $0.key.deviceID != deviceID }
            state.storedMessages[deviceID] = nil
            return state.connections.removeValue(forKey: deviceID)
        }
        connection?.events.finish()
        try save(deviceID: deviceID)
    }

    /// Marks one token expired. Registration tokens are matched exactly; APNs device tokens in
    /// any case.
    func expire(token: String) throws(SandboxError) {
        let timestamp = clock.epochMilliseconds
        let deviceID = try state.withLock { (state) throws(SandboxError) -> String in
            for tokens in [\State.fcmTokens, \State.hmsTokens] {
                guard let record = state[keyPath: tokens][token] else { continue }
                state[keyPath: tokens][token]?.state = .expired(at: timestamp)
                return record.deviceID
            }
            if let (id, record) = state.web.record(forToken: token) {
                state.web.subscriptions[id]?.state = .expired(at: timestamp)
                return record.deviceID
            }
            guard let record = state.apnsTokens[token.lowercased()] else { throw .unknownToken(token) }
            state.apnsTokens[token.lowercased()]?.state = .expired(at: timestamp)
            return record.deviceID
        }
        try save(deviceID: deviceID)
    }

    func apnsToken(_ token: String) -> APNsTokenRecord? {
        state.withLock { $0.apnsTokens[token] }
    }

    func fcmToken(_ token: String) -> FCMTokenRecord? {
        state.withLock { $0.fcmTokens[token] }
    }

    // MARK: - Delivery

    func deliver(
        _ notification: SandboxNotification,
        keepUntil: Int64?
    ) -> (delivery: DeviceDelivery, handoff: DeviceHandoff) {
        let (delivery, connection) = state.withLock { state -> (DeviceDelivery, DeviceConnection?) in
            guard let token = state.apnsTokens[notification.token] else { return (.notKept, nil) }
            guard token.state == .active else { return (.refused(token.state), nil) }
            if let connection = state.connections[token.deviceID] { return (.delivered, connection) }
            guard let keepUntil else { return (.notKept, nil) }
            // APNs keeps only the last notification per app (topic) for an offline device.
            state.storedNotifications[StoredKey(deviceID: token.deviceID, topic: notification.topic)] =
                StoredNotification(notification: notification, expiresAt: keepUntil)
            return (.stored, nil)
        }
        return (delivery, DeviceHandoff(connection: connection?.events, event: .notification(notification)))
    }

    func deliver(_ message: SandboxFCMMessage, keepUntil: Int64?) -> (delivery: DeviceDelivery, handoff: DeviceHandoff)
    {
        let now = clock.epochMilliseconds
        let (delivery, connection) = state.withLock { state -> (DeviceDelivery, DeviceConnection?) in
            guard let token = state.fcmTokens[message.token] else { return (.notKept, nil) }
            guard token.state == .active else { return (.refused(token.state), nil) }
            if let connection = state.connections[token.deviceID] { return (.delivered, connection) }
            guard let keepUntil else { return (.notKept, nil) }
            let stored = StoredMessage(
                event: .fcmMessage(message),
                collapseKey: message.collapseKey,
                expiresAt: keepUntil
            )
            state.store(stored, for: token.deviceID, now: now)
            return (.stored, nil)
        }
        return (delivery, DeviceHandoff(connection: connection?.events, event: .fcmMessage(message)))
    }

    // MARK: - Device connections

    /// Throws unless the device exists and its app is installed: checked before a WebSocket
    /// upgrade, so a refusal is an HTTP answer and not a socket that closes at once.
    func checkConnectable(deviceID: String) throws(SandboxError) {
        try state.withLock { (state) throws(SandboxError) in try state.checkConnectable(deviceID) }
    }

    /// Opens the device's connection: the returned stream yields its tokens as they become
    /// available, what was kept while it was offline, then every new push, in order. A second
    /// connection for the same device replaces the first.
    func connect(deviceID: String) throws(SandboxError) -> AsyncStream<SandboxDeviceEvent> {
        let now = clock.now
        let nowMilliseconds = clock.epochMilliseconds
        let (stream, continuation) = AsyncStream.makeStream(
            of: SandboxDeviceEvent.self,
            bufferingPolicy: .bufferingOldest(10_000)
        )
        let (id, replaced, later) = try state.withLock {
            (state) throws(SandboxError) -> (UInt64, DeviceConnection?, [TokenReveal]) in
            try state.checkConnectable(deviceID)
            let device = state.devices[deviceID]!
            state.nextConnectionID += 1
            let replaced = state.connections.updateValue(
                DeviceConnection(id: state.nextConnectionID, events: continuation),
                forKey: deviceID
            )
            // Yielded under the lock: a push delivered right after must not overtake these.
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
            for key in state.storedNotifications.keys where key.deviceID == deviceID {
                if let stored = state.storedNotifications.removeValue(forKey: key), stored.expiresAt > nowMilliseconds {
                    continuation.yield(.notification(stored.notification))
                }
            }
            for stored in state.storedMessages.removeValue(forKey: deviceID) ?? []
            where stored.expiresAt > nowMilliseconds {
                continuation.yield(stored.event)
            }
            for message in state.web.takeStored(for: deviceID, now: nowMilliseconds) {
                continuation.yield(.webPush(message))
            }
            return (state.nextConnectionID, replaced, later)
        }
        replaced?.events.finish()
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { state in
                if state.connections[deviceID]?.id == id { state.connections[deviceID] = nil }
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

    /// Ends every device connection.
    func disconnectAll() {
        let connections = state.withLock { state in
            defer { state.connections.removeAll() }
            return Array(state.connections.values)
        }
        for connection in connections { connection.events.finish() }
    }
}
