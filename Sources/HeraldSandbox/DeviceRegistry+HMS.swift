import HeraldAPNsCore

/// What the Push Kit emulator asks of the devices.
protocol HMSDeviceDirectory: Sendable {
    /// A Push Kit token the sandbox issued; its `projectID` is the Huawei app id.
    func hmsToken(_ token: String) -> FCMTokenRecord?
    /// Hands an accepted message to the device its token belongs to, or keeps it until
    /// `keepUntil` (milliseconds since the epoch) while the device is offline, one per collapse
    /// group; nil keeps nothing. A delivered one reaches the device at `handoff.complete()`.
    func deliver(_ message: SandboxHMSMessage, keepUntil: Int64?) -> (delivery: DeviceDelivery, handoff: DeviceHandoff)
}

extension DeviceRegistry: HMSDeviceDirectory {
    func hmsToken(_ token: String) -> FCMTokenRecord? {
        state.withLock { $0.hmsTokens[token] }
    }

    func deliver(_ message: SandboxHMSMessage, keepUntil: Int64?) -> (delivery: DeviceDelivery, handoff: DeviceHandoff)
    {
        let now = clock.epochMilliseconds
        let event = SandboxDeviceEvent.hmsMessage(message)
        let (delivery, connection) = state.withLock { state -> (DeviceDelivery, DeviceConnection?) in
            guard let token = state.hmsTokens[message.token] else { return (.notKept, nil) }
            guard token.state == .active else { return (.refused(token.state), nil) }
            if let connection = state.connections[token.deviceID] { return (.delivered, connection) }
            guard let keepUntil else { return (.notKept, nil) }
            // Push Kit keeps one message per collapse group (0–100); -1 keeps them all.
            let group = message.collapseKey.flatMap { $0 >= 0 ? "hms:\($0)" : nil }
            state.store(
                StoredMessage(event: event, collapseKey: group, expiresAt: keepUntil),
                for: token.deviceID,
                now: now
            )
            return (.stored, nil)
        }
        return (delivery, DeviceHandoff(connection: connection?.events, event: event))
    }

    /// Registers an Android or Huawei device: one token of `group` (its Firebase project or
    /// Huawei app), handed out at `readyAt`.
    func registerTokenDevice(
        _ platform: SandboxPlatform,
        bundleID: String,
        group: String,
        token: String,
        readyAt: ContinuousClock.Instant,
        apnsEnvironment: APNsEnvironment?
    ) throws(SandboxError) -> SandboxDevice {
        guard !bundleID.isEmpty else { throw .invalidRequest("bundle_id (the package name) must not be empty") }
        guard apnsEnvironment == nil else {
            let gets = platform == .android ? "an Android device gets an FCM token" : "a Huawei device a Push Kit token"
            throw .invalidRequest("apns_environment is for iOS devices; \(gets)")
        }
        let now = clock.now
        let device = DeviceRecord(
            id: "dev-" + RandomText.hex(bytes: 8),
            bundleID: bundleID,
            platform: platform,
            projectID: group,
            messagingToken: token,
            voipToken: nil,
            messagingReadyAt: readyAt,
            voipReadyAt: now
        )
        let view = state.withLock { state in
            state.devices[device.id] = device
            state[keyPath: State.tokens(of: platform)][token] = FCMTokenRecord(deviceID: device.id, projectID: group)
            return state.view(of: device, now: now)
        }
        try save(deviceID: device.id)
        return view
    }

    /// The app of a new Huawei device: the one asked for (`project_id`), or the registered
    /// Huawei app when there is exactly one.
    static func huaweiApp(_ appID: String?, registered apps: Set<String>) throws(SandboxError) -> String {
        if let appID {
            guard apps.contains(appID) else {
                throw .invalidRequest("project_id \(appID) is no registered Huawei app (POST /sandbox/hms/apps)")
            }
            return appID
        }
        guard apps.count == 1, let app = apps.first else {
            throw .invalidRequest(
                "project_id (the Huawei app id) is required for a Huawei device: \(apps.count) Huawei apps are "
                    + "registered (POST /sandbox/hms/apps)"
            )
        }
        return app
    }
}

extension DeviceRegistry.State {
    /// Where the tokens of an Android (FCM) or Huawei (Push Kit) device are kept.
    static func tokens(of platform: SandboxPlatform) -> WritableKeyPath<Self, [String: FCMTokenRecord]> {
        platform == .huawei ? \.hmsTokens : \.fcmTokens
    }
}

extension RandomText {
    /// A token in Push Kit's shape: `IQAAAACy` and URL-safe text.
    static func pushKitToken() -> String {
        "IQAAAACy" + urlSafe(count: 124)
    }
}
