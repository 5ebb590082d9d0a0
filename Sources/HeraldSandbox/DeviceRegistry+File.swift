import Foundation

/// The registry's devices and apps kept in a file, so a restarted sandbox still knows the tokens
/// it issued: a relay holds them, and a sandbox that forgot them would answer BadDeviceToken
/// (APNs) or UNREGISTERED (FCM) to every device activated before the restart.
///
/// What is kept: apps, devices, their tokens and the tokens' states (uninstalled, expired), and
/// when a token not yet handed out becomes available. What is not: device connections (devices
/// reconnect) and what was kept for offline devices.
extension DeviceRegistry {
    /// The file's form. `version` changes when the form does; another version is refused.
    struct FileContents: Codable, Equatable {
        static let currentVersion = 1

        struct App: Codable, Equatable {
            var bundleID: String
            var teamID: String

            enum CodingKeys: String, CodingKey {
                case bundleID = "bundle_id"
                case teamID = "team_id"
            }
        }

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

            enum CodingKeys: String, CodingKey {
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
    /// added to those known. A file that cannot be read or is not a registry is refused, rather
    /// than overwritten with an empty registry at the next change.
    func load() throws(SandboxError) {
        guard let file else { return }
        guard FileManager.default.fileExists(atPath: file) else { return }
        let contents: FileContents
        do {
            let data = try Data(contentsOf: URL(filePath: file))
            contents = try JSONDecoder().decode(FileContents.self, from: data)
        } catch {
            throw .registryFile("\(file) is not a sandbox device registry (\(error.localizedDescription))")
        }
        guard contents.version == FileContents.currentVersion else {
            throw .registryFile("\(file) has version \(contents.version); this sandbox reads version 1")
        }
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
                guard let messagingState = stored.messagingStatus.tokenState else {
                    throw .registryFile("\(file): device \(stored.deviceID) has an unknown token state")
                }
                let device = DeviceRecord(
                    id: stored.deviceID,
                    bundleID: stored.bundleID,
                    platform: stored.platform,
                    projectID: stored.projectID,
                    messagingToken: stored.messagingToken,
                    voipToken: stored.voipToken,
                    messagingReadyAt: instant(stored.messagingReadyAt),
                    voipReadyAt: instant(stored.voipReadyAt)
                )
                state.devices[device.id] = device
                switch stored.platform {
                case .ios:
                    state.apnsTokens[device.messagingToken] = APNsTokenRecord(
                        deviceID: device.id,
                        topic: device.bundleID,
                        kind: .messaging,
                        state: messagingState
                    )
                    if let voipToken = device.voipToken {
                        state.apnsTokens[voipToken] = APNsTokenRecord(
                            deviceID: device.id,
                            topic: device.bundleID + ".voip",
                            kind: .voip,
                            state: stored.voipStatus?.tokenState ?? .active
                        )
                    }
                case .android:
                    state.fcmTokens[device.messagingToken] = FCMTokenRecord(
                        deviceID: device.id,
                        projectID: device.projectID ?? "",
                        state: messagingState
                    )
                }
            }
        }
    }

    /// Writes the registry's apps and devices to its file, if it has one: beside it, then
    /// renamed (`.atomic`), so a crash leaves the old file or the new one. One writer at a time, each with
    /// the state as it is when it writes, so the file never goes back to an older state.
    func save() throws(SandboxError) {
        guard let file else { return }
        try fileLock.withLock { _ throws(SandboxError) in
            let now = clock.now
            let nowMilliseconds = clock.epochMilliseconds
            func epoch(_ instant: ContinuousClock.Instant) -> Int64 {
                instant <= now ? nowMilliseconds : nowMilliseconds + Int64((instant - now) / .milliseconds(1)) + 1
            }
            let contents = state.withLock { state in
                FileContents(
                    version: FileContents.currentVersion,
                    apps: state.apps.map { FileContents.App(bundleID: $0.key, teamID: $0.value) }
                        .sorted { $0.bundleID < $1.bundleID },
                    devices: state.devices.values.sorted { $0.id < $1.id }.map { device in
                        let messagingState: TokenState =
                            switch device.platform {
                            case .ios: state.apnsTokens[device.messagingToken]?.state ?? .active
                            case .android: state.fcmTokens[device.messagingToken]?.state ?? .active
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
                            voipStatus: device.voipToken.map { .init(state.apnsTokens[$0]?.state ?? .active) }
                        )
                    }
                )
            }
            do {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                let data = try encoder.encode(contents)
                let directory = (file as NSString).deletingLastPathComponent
                if !directory.isEmpty {
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                }
                try data.write(to: URL(filePath: file), options: .atomic)
            } catch {
                throw .registryFile("cannot write \(file): \(error.localizedDescription)")
            }
        }
    }
}
