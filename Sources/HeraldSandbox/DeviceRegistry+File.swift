import Foundation
import HeraldAPNsCore
import HeraldEncoding

/// The registry's devices and apps kept in a file, so a restarted sandbox still knows the tokens
/// it issued: a relay holds them, and a sandbox that forgot them would answer BadDeviceToken
/// (APNs) or UNREGISTERED (FCM) to every device activated before the restart.
///
/// What is kept: apps, devices, their tokens and the tokens' states (uninstalled, expired), and
/// when a token not yet handed out becomes available. What is not: device connections (devices
/// reconnect) and what was kept for offline devices.
///
/// The file is a journal, one JSON object a line: a header line with the version, then an app or
/// a device as it is after each change (a later line for the same one wins). A change appends one
/// line, so registering many devices costs the same per device however many there are (rewriting
/// the whole registry at each change made registering 10,000 devices take minutes); `load()`
/// compacts the file to one line per app and device.
extension DeviceRegistry {
    /// The file's form. `version` changes when the form does; another version is refused.
    struct FileContents: Codable, Equatable {
        static let currentVersion = 2

        /// One line of the file: the header (`version`), an app or a device.
        struct Line: Codable, Equatable {
            var version: Int?
            var app: App?
            var device: Device?
        }

        /// An app's line is the app as the control API takes it (`bundle_id`, `team_id`).
        typealias App = SandboxApp

        /// A token's state; `at` in milliseconds since the epoch for the unregistered and
        /// expired states.
        struct TokenStatus: Codable, Equatable {
            var state: String
            var at: Int64?

            init(_ state: TokenState) {
                switch state {
                case .active: self.state = "active"
                case .unregistered(let at): (self.state, self.at) = ("unregistered", at)
                case .expired(let at): (self.state, self.at) = ("expired", at)
                }
            }

            var tokenState: TokenState? {
                switch (state, at) {
                case ("active", _): .active
                case ("unregistered", let at?): .unregistered(at: at)
                case ("expired", let at?): .expired(at: at)
                default: nil
                }
            }
        }

        struct Device: Codable, Equatable {
            var deviceID: String
            var bundleID: String
            var platform: SandboxPlatform
            var projectID: String?
            var messagingToken: String
            var voipToken: String?
            /// When each token is handed out, in milliseconds since the epoch.
            var messagingReadyAt: Int64
            var voipReadyAt: Int64
            var messagingStatus: TokenStatus
            var voipStatus: TokenStatus?
            /// iOS: the environment of its tokens; absent in files from before there were two
            /// (their tokens are development ones).
            var apnsEnvironment: APNsEnvironment? = nil
            /// Web: the application server key its subscription was made with (base64url).
            var applicationServerKey: String? = nil

            enum CodingKeys: String, CodingKey {
                case apnsEnvironment = "apns_environment"
                case applicationServerKey = "application_server_key"
                case platform
                case deviceID = "device_id"
                case bundleID = "bundle_id"
                case projectID = "project_id"
                case messagingToken = "messaging_token"
                case voipToken = "voip_token"
                case messagingReadyAt = "messaging_ready_at"
                case voipReadyAt = "voip_ready_at"
                case messagingStatus = "messaging_status"
                case voipStatus = "voip_status"
            }
        }

        var version: Int
        var apps: [App]
        var devices: [Device]
    }

    /// Reads the registry's file, when there is one and it exists: its apps and devices are
    /// added to those known, and the file is rewritten with one line for each. A file that cannot
    /// be read or is not a registry is refused, rather than overwritten with an empty registry.
    func load() throws(SandboxError) {
        guard let file else { return }
        guard FileManager.default.fileExists(atPath: file) else { return }
        let contents = try Self.read(file)
        let now = clock.now
        let nowMilliseconds = clock.epochMilliseconds
        func instant(_ epoch: Int64) -> ContinuousClock.Instant {
            now + .milliseconds(max(0, epoch - nowMilliseconds))
        }
        try state.withLock { (state) throws(SandboxError) in
            for app in contents.apps where state.apps[app.bundleID] == nil {
                state.apps[app.bundleID] = app.teamID
            }
            for stored in contents.devices {
                try Self.restore(stored, into: &state, file: file, instant: instant)
            }
        }
        try save()
    }

    /// The journal replayed: its apps and devices, each as its last line left it.
    private static func read(_ file: String) throws(SandboxError) -> FileContents {
        var contents = FileContents(version: FileContents.currentVersion, apps: [], devices: [])
        do {
            let data = try Data(contentsOf: URL(filePath: file))
            let decoder = JSONDecoder()
            var lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).makeIterator()
            guard let first = lines.next(),
                let version = try decoder.decode(FileContents.Line.self, from: first).version
            else {
                throw SandboxError.registryFile("\(file) is not a sandbox device registry (no version line)")
            }
            guard version == FileContents.currentVersion else {
                throw SandboxError.registryFile(
                    "\(file) has version \(version); this sandbox reads version \(FileContents.currentVersion)"
                )
            }
            var devices: [String: Int] = [:]
            while let bytes = lines.next() {
                let line = try decoder.decode(FileContents.Line.self, from: bytes)
                if let app = line.app {
                    contents.apps.removeAll { $0.bundleID == app.bundleID }
                    contents.apps.append(app)
                }
                if let device = line.device {
                    if let index = devices[device.deviceID] {
                        contents.devices[index] = device
                    } else {
                        devices[device.deviceID] = contents.devices.count
                        contents.devices.append(device)
                    }
                }
            }
        } catch let error as SandboxError {
            throw error
        } catch {
            throw .registryFile("\(file) is not a sandbox device registry (\(error.localizedDescription))")
        }
        return contents
    }

    /// Adds a device read from the file, with its tokens, to the registry's state.
    private static func restore(
        _ stored: FileContents.Device,
        into state: inout State,
        file: String,
        instant: (Int64) -> ContinuousClock.Instant
    ) throws(SandboxError) {
        guard let messagingState = stored.messagingStatus.tokenState else {
            throw .registryFile("\(file): device \(stored.deviceID) has an unknown token state")
        }
        let environment = stored.platform == .ios ? stored.apnsEnvironment ?? .development : nil
        let device = DeviceRecord(
            id: stored.deviceID,
            bundleID: stored.bundleID,
            platform: stored.platform,
            projectID: stored.projectID,
            messagingToken: stored.messagingToken,
            voipToken: stored.voipToken,
            messagingReadyAt: instant(stored.messagingReadyAt),
            voipReadyAt: instant(stored.voipReadyAt),
            apnsEnvironment: environment
        )
        state.devices[device.id] = device
        switch stored.platform {
        case .ios:
            state.apnsTokens[device.messagingToken] = APNsTokenRecord(
                deviceID: device.id,
                topic: device.bundleID,
                kind: .messaging,
                state: messagingState,
                environment: environment ?? .development
            )
            if let voipToken = device.voipToken {
                state.apnsTokens[voipToken] = APNsTokenRecord(
                    deviceID: device.id,
                    topic: device.bundleID + ".voip",
                    kind: .voip,
                    state: stored.voipStatus?.tokenState ?? .active,
                    environment: environment ?? .development
                )
            }
        case .android, .huawei:
            state[keyPath: State.tokens(of: stored.platform)][device.messagingToken] = FCMTokenRecord(
                deviceID: device.id,
                projectID: device.projectID ?? "",
                state: messagingState
            )
        case .web:
            guard let id = subscriptionID(of: device.messagingToken),
                let key = stored.applicationServerKey.flatMap(applicationServerKey)
            else { throw .registryFile("\(file): web device \(stored.deviceID) has no valid subscription") }
            state.web.subscriptions[id] = WebSubscriptionRecord(
                deviceID: device.id,
                endpoint: device.messagingToken,
                applicationServerKey: key,
                state: messagingState
            )
        }
    }

    /// Rewrites the file with one line for each app and device (`load()` compacts the journal
    /// this way): beside it, then renamed, so a crash leaves the old file or the new one.
    func save() throws(SandboxError) {
        guard let file else { return }
        try fileLock.withLock { _ throws(SandboxError) in try writeAll(to: file) }
    }

    /// `save()` with the file's lock held.
    private func writeAll(to file: String) throws(SandboxError) {
        let (now, nowMilliseconds) = (clock.now, clock.epochMilliseconds)
        let lines = state.withLock { state in
            state.apps.sorted { $0.key < $1.key }.map {
                FileContents.Line(app: .init(bundleID: $0.key, teamID: $0.value))
            }
                + state.devices.values.sorted { $0.id < $1.id }.map { device in
                    FileContents.Line(device: Self.fileDevice(device, in: state, now: now, epoch: nowMilliseconds))
                }
        }
        do {
            let data = try Self.encode([FileContents.Line(version: FileContents.currentVersion)] + lines)
            let directory = FilePathText.parent(of: file)
            if !directory.isEmpty {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            }
            try data.write(to: URL(filePath: file), options: .atomic)
        } catch {
            throw .registryFile("cannot write \(file): \(error.localizedDescription)")
        }
    }

    /// Appends the device's state as it is now to the file, if there is one (with the header
    /// first when the file is new). Taken and written under the file's lock, so the last line of
    /// a device is its latest state.
    func save(deviceID: String) throws(SandboxError) {
        guard file != nil else { return }
        try append { state, now, epoch in
            state.devices[deviceID].map {
                FileContents.Line(device: Self.fileDevice($0, in: state, now: now, epoch: epoch))
            }
        }
    }

    /// Appends the app (its team) to the file, if there is one.
    func save(appID: String) throws(SandboxError) {
        guard file != nil else { return }
        try append { state, _, _ in
            state.apps[appID].map { FileContents.Line(app: .init(bundleID: appID, teamID: $0)) }
        }
    }

    /// Appends the line `line` makes of the state as it is now; a file not there yet is written
    /// whole (the apps the registry started with included).
    private func append(
        _ line: (State, ContinuousClock.Instant, Int64) -> FileContents.Line?
    ) throws(SandboxError) {
        guard let file else { return }
        try fileLock.withLock { _ throws(SandboxError) in
            guard FileManager.default.fileExists(atPath: file) else { return try writeAll(to: file) }
            let (now, nowMilliseconds) = (clock.now, clock.epochMilliseconds)
            guard let entry = state.withLock({ line($0, now, nowMilliseconds) }) else { return }
            do {
                let handle = try FileHandle(forWritingTo: URL(filePath: file))
                defer { try? handle.close() }
                try handle.seekToEnd()
                try handle.write(contentsOf: try Self.encode([entry]))
            } catch {
                throw .registryFile("cannot write \(file): \(error.localizedDescription)")
            }
        }
    }

    private static func encode(_ lines: [FileContents.Line]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var data = Data()
        for line in lines {
            data.append(try encoder.encode(line))
            data.append(UInt8(ascii: "\n"))
        }
        return data
    }

    /// A device as the file keeps it; instants become milliseconds since the epoch.
    private static func fileDevice(
        _ device: DeviceRecord,
        in state: State,
        now: ContinuousClock.Instant,
        epoch nowMilliseconds: Int64
    ) -> FileContents.Device {
        func epoch(_ instant: ContinuousClock.Instant) -> Int64 {
            instant <= now ? nowMilliseconds : nowMilliseconds + Int64((instant - now) / .milliseconds(1)) + 1
        }
        let messagingState: TokenState =
            switch device.platform {
            case .ios: state.apnsTokens[device.messagingToken]?.state ?? .active
            case .android, .huawei:
                state[keyPath: State.tokens(of: device.platform)][device.messagingToken]?.state ?? .active
            case .web: state.web.record(forToken: device.messagingToken)?.record.state ?? .active
            }
        return FileContents.Device(
            deviceID: device.id,
            bundleID: device.bundleID,
            platform: device.platform,
            projectID: device.projectID,
            messagingToken: device.messagingToken,
            voipToken: device.voipToken,
            messagingReadyAt: epoch(device.messagingReadyAt),
            voipReadyAt: epoch(device.voipReadyAt),
            messagingStatus: .init(messagingState),
            voipStatus: device.voipToken.map { .init(state.apnsTokens[$0]?.state ?? .active) },
            apnsEnvironment: device.apnsEnvironment,
            applicationServerKey: state.web.record(forToken: device.messagingToken).map {
                Base64URL.encode($0.record.applicationServerKey)
            }
        )
    }
}
