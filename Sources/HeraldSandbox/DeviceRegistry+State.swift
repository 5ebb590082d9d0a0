import DequeModule
import HeraldAPNsCore

/// What the registry holds under its lock: apps, devices and their tokens, what is kept for
/// offline devices, and the open device connections.
extension DeviceRegistry {
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
        /// iOS: the APNs environment its tokens belong to; nil for Android.
        var apnsEnvironment: APNsEnvironment? = nil
    }

    /// A token handed to a device later, at its retrieval delay.
    typealias TokenReveal = (kind: SandboxTokenKind, token: String, readyAt: ContinuousClock.Instant)

    /// What APNs keeps per offline device: one notification per topic.
    struct StoredKey: Hashable {
        let deviceID: String
        let topic: String
    }

    struct StoredNotification {
        let notification: SandboxNotification
        /// Milliseconds since the epoch.
        let expiresAt: Int64
    }

    /// A message kept for an offline Android or Huawei device.
    struct StoredMessage {
        /// The frame the device gets when it connects.
        let event: SandboxDeviceEvent
        /// Messages of the same key replace each other.
        let collapseKey: String?
        /// Milliseconds since the epoch.
        let expiresAt: Int64
    }

    struct DeviceConnection {
        let id: UInt64
        let events: AsyncStream<SandboxDeviceEvent>.Continuation
    }

    struct State {
        var apps: [String: String] = [:]
        var devices: [String: DeviceRecord] = [:]
        var apnsTokens: [String: APNsTokenRecord] = [:]
        var fcmTokens: [String: FCMTokenRecord] = [:]
        /// Push Kit tokens; a record's `projectID` is the Huawei app id.
        var hmsTokens: [String: FCMTokenRecord] = [:]
        var storedNotifications: [StoredKey: StoredNotification] = [:]
        var storedMessages: [String: Deque<StoredMessage>] = [:]
        var web = WebPushDevices()
        var connections: [String: DeviceConnection] = [:]
        var nextConnectionID: UInt64 = 0

        /// Throws unless `deviceID` exists and its app is installed.
        func checkConnectable(_ deviceID: String) throws(SandboxError) {
            guard let device = devices[deviceID] else { throw .unknownDevice(deviceID) }
            let status =
                switch device.platform {
                case .ios: apnsTokens[device.messagingToken]?.state
                case .android, .huawei: self[keyPath: Self.tokens(of: device.platform)][device.messagingToken]?.state
                case .web: web.record(forToken: device.messagingToken)?.record.state
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
                connected: connections[device.id] != nil,
                apnsEnvironment: device.apnsEnvironment
            )
        }

        /// Keeps a message for an offline device: expired ones go, one with the same collapse key
        /// is replaced, and beyond the limit the oldest is dropped.
        mutating func store(_ stored: StoredMessage, for deviceID: String, now: Int64) {
            let key = stored.collapseKey
            storedMessages[deviceID, default: []].keep(stored) {
                $0.expiresAt <= now || (key != nil && $0.collapseKey == key)
            }
        }
    }
}
