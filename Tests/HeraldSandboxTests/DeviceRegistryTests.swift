import HeraldAPNsCore
import Testing

@testable import HeraldSandbox

/// The device registry without a listener: registration, uninstall and expiry, delivery and
/// what is kept for offline devices.
@Suite(.timeLimit(.minutes(1)))
struct DeviceRegistryTests {
    static let app = SandboxApp(bundleID: "com.example.chat", teamID: "TEAM123456")

    static func notification(to token: String, topic: String = app.bundleID, id: String = "1") -> SandboxNotification {
        SandboxNotification(
            apnsID: id,
            token: token,
            topic: topic,
            pushType: .alert,
            priority: 10,
            expiration: nil,
            collapseID: nil,
            payload: "{}",
            acceptedAt: 0
        )
    }

    static func message(to token: String, name: String, collapseKey: String? = nil) -> SandboxFCMMessage {
        SandboxFCMMessage(name: name, token: token, data: [:], collapseKey: collapseKey, sentAt: 0)
    }

    static let farFuture = SandboxClock().epochMilliseconds + 3_600_000

    @Test func anIOSDeviceNeedsARegisteredAppAndNoProject() throws {
        let registry = DeviceRegistry(apps: [Self.app])
        #expect(throws: SandboxError.unknownApp("")) { try registry.registerDevice(bundleID: "com.example.other") }
        #expect(throws: SandboxError.invalidRequest("")) {
            try registry.registerDevice(bundleID: Self.app.bundleID, projectID: "p")
        }
        let device = try registry.registerDevice(bundleID: Self.app.bundleID)
        let messaging = try #require(device.messagingToken)
        let voip = try #require(device.voipToken)
        #expect(registry.apnsToken(messaging)?.topic == Self.app.bundleID)
        #expect(registry.apnsToken(voip)?.topic == Self.app.bundleID + ".voip")
        #expect(registry.apnsToken(voip)?.kind == .voip)
        #expect(registry.team(ofApp: Self.app.bundleID) == Self.app.teamID)
    }

    @Test func anAndroidDeviceTakesTheOnlyServiceAccountProject() throws {
        let registry = DeviceRegistry()
        #expect(throws: SandboxError.invalidRequest("")) {
            try registry.registerDevice(bundleID: "com.example.android", platform: .android)
        }
        #expect(throws: SandboxError.invalidRequest("")) {
            try registry.registerDevice(
                bundleID: "com.example.android",
                platform: .android,
                serviceAccountProjects: ["a", "b"]
            )
        }
        let device = try registry.registerDevice(
            bundleID: "com.example.android",
            platform: .android,
            serviceAccountProjects: ["only"]
        )
        #expect(device.projectID == "only")
        let token = try #require(device.messagingToken)
        #expect(registry.fcmToken(token) == FCMTokenRecord(deviceID: device.deviceID, projectID: "only"))
        let chosen = try registry.registerDevice(
            bundleID: "com.example.android",
            platform: .android,
            projectID: "chosen",
            serviceAccountProjects: ["only"]
        )
        #expect(chosen.projectID == "chosen")
    }

    @Test func uninstallingUnregistersTheTokensEndsTheConnectionAndForgetsWhatWasKept() async throws {
        let registry = DeviceRegistry(apps: [Self.app])
        let device = try registry.registerDevice(bundleID: Self.app.bundleID)
        let token = try #require(device.messagingToken)
        #expect(registry.deliver(Self.notification(to: token), keepUntil: Self.farFuture).delivery == .stored)
        var events = try registry.connect(deviceID: device.deviceID).makeAsyncIterator()
        #expect(try registry.device(id: device.deviceID).connected)

        let before = SandboxClock().epochMilliseconds
        try registry.uninstall(deviceID: device.deviceID)
        guard case .unregistered(let at) = registry.apnsToken(token)?.state else {
            Issue.record("the token is still \(String(describing: registry.apnsToken(token)))")
            return
        }
        #expect(at >= before)
        guard case .unregistered = registry.apnsToken(try #require(device.voipToken))?.state else {
            Issue.record("the VoIP token is still active")
            return
        }
        // The connection had the tokens and the stored notification, then ends.
        var received: [SandboxDeviceEvent] = []
        while let event = await events.next() { received.append(event) }
        #expect(received.count == 3)
        #expect(throws: SandboxError.appUninstalled("")) { try registry.checkConnectable(deviceID: device.deviceID) }
        #expect(
            registry.deliver(Self.notification(to: token), keepUntil: Self.farFuture).delivery
                == .refused(.unregistered(at: at))
        )
        #expect(throws: SandboxError.unknownDevice("")) { try registry.uninstall(deviceID: "dev-none") }
    }

    @Test func expiringMatchesAPNsTokensInAnyCaseAndRegistrationTokensExactly() throws {
        let registry = DeviceRegistry(apps: [Self.app])
        let ios = try registry.registerDevice(bundleID: Self.app.bundleID)
        let apnsToken = try #require(ios.messagingToken)
        try registry.expire(token: apnsToken.uppercased())
        guard case .expired = registry.apnsToken(apnsToken)?.state else {
            Issue.record("the APNs token did not expire")
            return
        }
        // An expired token's device can still connect: only an uninstall closes it.
        try registry.checkConnectable(deviceID: ios.deviceID)

        let android = try registry.registerDevice(bundleID: "a", platform: .android, projectID: "p")
        let registration = try #require(android.messagingToken)
        #expect(throws: SandboxError.unknownToken("")) { try registry.expire(token: registration.uppercased()) }
        try registry.expire(token: registration)
        guard case .expired = registry.fcmToken(registration)?.state else {
            Issue.record("the registration token did not expire")
            return
        }
    }

    @Test func anOfflineDeviceGetsOnlyTheLastNotificationPerTopic() async throws {
        let registry = DeviceRegistry(apps: [Self.app])
        let device = try registry.registerDevice(bundleID: Self.app.bundleID)
        let token = try #require(device.messagingToken)
        let voip = try #require(device.voipToken)
        #expect(
            registry.deliver(Self.notification(to: token, id: "old"), keepUntil: Self.farFuture).delivery == .stored
        )
        #expect(
            registry.deliver(Self.notification(to: token, id: "new"), keepUntil: Self.farFuture).delivery == .stored
        )
        let call = Self.notification(to: voip, topic: Self.app.bundleID + ".voip", id: "call")
        #expect(registry.deliver(call, keepUntil: Self.farFuture).delivery == .stored)
        #expect(registry.deliver(Self.notification(to: token, id: "once"), keepUntil: nil).delivery == .notKept)

        var events = try registry.connect(deviceID: device.deviceID).makeAsyncIterator()
        var ids: Set<String> = []
        for _ in 0..<4 {
            if case .notification(let notification) = await events.next() { ids.insert(notification.apnsID) }
        }
        #expect(ids == ["new", "call"])
        let (delivery, handoff) = registry.deliver(Self.notification(to: token, id: "live"), keepUntil: nil)
        #expect(delivery == .delivered)
        handoff.complete()
        guard case .notification(let live) = await events.next() else {
            Issue.record("no live notification")
            return
        }
        #expect(live.apnsID == "live")
        registry.disconnectAll()
        #expect(await events.next() == nil)
    }

    @Test func fcmMessagesQueueWithCollapseKeysExpiryAndALimit() async throws {
        let registry = DeviceRegistry()
        let device = try registry.registerDevice(bundleID: "a", platform: .android, projectID: "p")
        let token = try #require(device.messagingToken)
        let expired = SandboxClock().epochMilliseconds - 1
        #expect(registry.deliver(Self.message(to: token, name: "gone"), keepUntil: expired).delivery == .stored)
        #expect(
            registry.deliver(Self.message(to: token, name: "k1", collapseKey: "k"), keepUntil: Self.farFuture).delivery
                == .stored
        )
        let limit = DeviceRegistry.storedMessageLimit
        for index in 0..<(limit - 1) {
            _ = registry.deliver(Self.message(to: token, name: "m\(index)"), keepUntil: Self.farFuture)
        }
        // The queue is full: k2 replaces k1 (collapse key), then m99 pushes out the oldest, m0.
        #expect(
            registry.deliver(Self.message(to: token, name: "k2", collapseKey: "k"), keepUntil: Self.farFuture).delivery
                == .stored
        )
        _ = registry.deliver(Self.message(to: token, name: "m\(limit - 1)"), keepUntil: Self.farFuture)

        var events = try registry.connect(deviceID: device.deviceID).makeAsyncIterator()
        #expect(await events.next() == .token(kind: .messaging, token: token))
        var names: [String] = []
        for _ in 0..<limit {
            if case .fcmMessage(let message) = await events.next() { names.append(message.name) }
        }
        #expect(names.count == limit)
        #expect(names.first == "m1")
        #expect(Array(names.suffix(2)) == ["k2", "m\(limit - 1)"])
        #expect(!names.contains("k1") && !names.contains("gone") && !names.contains("m0"))
        registry.disconnectAll()
        #expect(await events.next() == nil)
    }

    @Test func aDeliveredPushReachesTheDeviceOnlyWhenHandedOver() async throws {
        let registry = DeviceRegistry(apps: [Self.app])
        let device = try registry.registerDevice(bundleID: Self.app.bundleID)
        let token = try #require(device.messagingToken)
        var events = try registry.connect(deviceID: device.deviceID).makeAsyncIterator()
        for _ in 0..<2 { _ = await events.next() }  // the two tokens
        let (delivery, handoff) = registry.deliver(Self.notification(to: token), keepUntil: nil)
        #expect(delivery == .delivered)
        // Ending the connection before the handoff: had `deliver` yielded, the push would
        // still come out of the stream before its end.
        registry.disconnectAll()
        handoff.complete()
        #expect(await events.next() == nil)
    }
}
