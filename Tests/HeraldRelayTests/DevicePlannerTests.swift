import HeraldCrypto
import HeraldPush
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldRelay

/// The device rules as data: no store, no network, no clock but the one passed in.
@Suite("Device planner")
struct DevicePlannerTests {
    static let planner = DevicePlanner(configuration: RelayConfiguration())
    static let devicePublicKey = KeyPair.generate().publicKey
    static let iosToken = String(repeating: "ab", count: 32)

    static func request(
        user: String = "u",
        platform: DevicePlatform = .ios,
        messagingToken: String? = nil,
        voipToken: String? = nil,
        deviceID: String? = nil,
        environment: APNsEnvironment? = nil
    ) -> ActivationRequest {
        ActivationRequest(
            userID: user,
            app: StoreFixtures.appID,
            platform: platform,
            publicKey: devicePublicKey.base64,
            messagingToken: messagingToken,
            voipToken: voipToken,
            deviceID: deviceID,
            apnsEnvironment: environment
        )
    }

    static func keys(_ deviceID: String) -> ActivationKeys {
        ActivationKeys(
            deviceID: deviceID,
            keyID: "k2",
            relayPublicKey: KeyPair.generate().publicKey,
            sealedRelaySecretKey: [7],
            sealedSessionKeys: [8],
            credential: DeviceCredential.make(deviceID: deviceID)
        )
    }

    /// A refusal's kind and field, for comparing refusals by what they say.
    static func refusal(_ work: () throws(RelayError) -> Void) -> String? {
        do {
            try work()
            return nil
        } catch {
            return error.identifier + (error.field.map { ":" + $0 } ?? "")
        }
    }

    struct AdmissionCase: Sendable, CustomStringConvertible {
        var name: String
        var request: ActivationRequest
        var app: AppRecord? = StoreFixtures.app()
        var previous: DeviceRecord? = nil
        var refusal: String?
        var description: String { name }
    }

    static let admissionCases: [AdmissionCase] = {
        var androidWithEnvironment = request(platform: .android)
        androidWithEnvironment.apnsEnvironment = .development
        var badKey = request()
        badKey.publicKey = "c2hvcnQ="
        var mine = StoreFixtures.device("d1")
        mine.userID = "u"
        var android = StoreFixtures.androidDevice("d1", token: String(repeating: "x", count: 20))
        android.userID = "u"
        return [
            AdmissionCase(name: "a new iOS device", request: request(messagingToken: iosToken), refusal: nil),
            AdmissionCase(name: "no such app", request: request(), app: nil, refusal: "invalid_field:app"),
            AdmissionCase(name: "not a crypto_kx key", request: badKey, refusal: "invalid_field:public_key"),
            AdmissionCase(
                name: "an APNs token that is not hex",
                request: request(messagingToken: "not-hex-not-hex-not-hex"),
                refusal: "invalid_field:messaging_token"
            ),
            AdmissionCase(
                name: "a VoIP token on Android",
                request: request(platform: .android, voipToken: String(repeating: "a", count: 20)),
                refusal: "invalid_field:voip_token"
            ),
            AdmissionCase(
                name: "an APNs environment on Android",
                request: androidWithEnvironment,
                refusal: "invalid_field:apns_environment"
            ),
            AdmissionCase(
                name: "re-activating a device that is gone",
                request: request(deviceID: "d1"),
                refusal: "not_found"
            ),
            AdmissionCase(
                name: "re-activating another user's device",
                request: request(user: "someone-else", deviceID: "d1"),
                previous: mine,
                refusal: "forbidden"
            ),
            AdmissionCase(
                name: "re-activating on another platform",
                request: request(deviceID: "d1"),
                previous: android,
                refusal: "invalid_field:platform"
            ),
            AdmissionCase(name: "re-activating one's own device", request: request(deviceID: "d1"), previous: mine),
        ]
    }()

    @Test("activation admission", arguments: admissionCases)
    func admission(_ test: AdmissionCase) {
        let refusal = Self.refusal { () throws(RelayError) in
            _ = try Self.planner.admitActivation(test.request, app: test.app, previous: test.previous)
        }
        #expect(refusal == test.refusal)
    }

    /// An activation planned at 1000 ms, and the device it saves.
    static func activation(
        _ request: ActivationRequest,
        previous: DeviceRecord?,
        id: String
    ) throws -> (Planned<ActivationResponse>, DeviceRecord) {
        let planned = planner.activation(
            request,
            app: StoreFixtures.app(),
            previous: previous,
            devicePublicKey: devicePublicKey,
            keys: keys(id),
            now: 1_000
        )
        #expect(planned.change.writes.count == 1)
        guard case .saveDevice(let device) = try #require(planned.change.writes.first) else {
            throw RelayError.conflict.with(detail: "an activation saves its device")
        }
        return (planned, device)
    }

    @Test("a new device: saved granted, counted, its user's held messages released, logged")
    func newDevice() throws {
        let (planned, device) = try Self.activation(
            Self.request(messagingToken: Self.iosToken),
            previous: nil,
            id: "d9"
        )
        #expect(device.id == "d9" && device.createdAt == 1_000 && device.updatedAt == 1_000)
        #expect(device.notificationPermission == .granted && device.previousKeyID == nil)
        #expect(device.messagingToken == Self.iosToken && device.devicePublicKey == Self.devicePublicKey.bytes)
        #expect(Array(planned.change.effects.prefix(2)) == [.countActivation, .releaseHeld(userID: "u")])
        #expect(planned.answer.deviceID == "d9" && planned.answer.keyID == "k2" && planned.answer.previousKeyID == nil)
        #expect(planned.change.refusalWhenStale == nil)
    }

    @Test("a re-activation keeps the device's tokens, birth, permission and environment; the old key is previous")
    func reactivation() throws {
        var previous = StoreFixtures.device("d1", createdAt: 5)
        previous.notificationPermission = .denied
        previous.notificationPermissionAt = 6
        previous.apnsEnvironment = .development
        let (planned, device) = try Self.activation(Self.request(deviceID: "d1"), previous: previous, id: "d1")
        #expect(device.messagingToken == previous.messagingToken && device.voipToken == previous.voipToken)
        #expect(device.createdAt == 5 && device.updatedAt == 1_000)
        #expect(device.notificationPermission == .denied && device.notificationPermissionAt == 6)
        #expect(device.previousKeyID == previous.keyID && device.keyID == "k2")
        #expect(device.apnsEnvironment == .development)
        #expect(planned.answer.previousKeyID == previous.keyID)
    }

    struct EnvironmentCase: Sendable, CustomStringConvertible {
        var name: String
        var request: ActivationRequest
        /// The device's before, its app's and the fleet's default.
        var sources: (previous: APNsEnvironment?, app: APNsEnvironment?, fleet: APNsEnvironment?)
        var expected: APNsEnvironment?
        var description: String { name }
    }

    static let environmentCases: [EnvironmentCase] = [
        EnvironmentCase(
            name: "named by the device",
            request: request(environment: .development),
            sources: (nil, .production, nil),
            expected: .development
        ),
        EnvironmentCase(
            name: "kept on a re-activation without tokens",
            request: request(deviceID: "d1"),
            sources: (.development, .production, nil),
            expected: .development
        ),
        EnvironmentCase(
            name: "a new token takes the app's",
            request: request(messagingToken: iosToken, deviceID: "d1"),
            sources: (.development, .production, nil),
            expected: .production
        ),
        EnvironmentCase(
            name: "else the fleet's",
            request: request(),
            sources: (nil, nil, .development),
            expected: .development
        ),
        EnvironmentCase(
            name: "none on Android",
            request: request(platform: .android),
            sources: (nil, .development, nil),
            expected: nil
        ),
    ]

    @Test("an iOS device's APNs environment", arguments: environmentCases)
    func environment(_ test: EnvironmentCase) {
        var configuration = RelayConfiguration()
        configuration.fleet.defaultAPNsEnvironment = test.sources.fleet
        var app = StoreFixtures.app()
        app.apnsEnvironment = test.sources.app
        var previous = StoreFixtures.device("d1")
        previous.apnsEnvironment = test.sources.previous
        let planner = DevicePlanner(configuration: configuration)
        #expect(planner.environment(of: test.request, app: app, previous: previous) == test.expected)
    }

    /// What a token update is refused with, or `nil`.
    static func tokenRefusal(_ request: TokenUpdateRequest, current: DeviceRecord?) -> String? {
        refusal { () throws(RelayError) in
            _ = try planner.tokenUpdate(request, deviceID: current?.id ?? "d1", current: current, now: 9)
        }
    }

    @Test("tokens: checked against the device's platform; a device gone is not found, before or after")
    func tokens() throws {
        let device = StoreFixtures.device("d1")
        #expect(Self.tokenRefusal(TokenUpdateRequest(), current: device) == "invalid_field:messaging_token")
        #expect(Self.tokenRefusal(TokenUpdateRequest(messagingToken: Self.iosToken), current: nil) == "not_found")
        let android = StoreFixtures.androidDevice("d2", token: String(repeating: "x", count: 20))
        #expect(
            Self.tokenRefusal(TokenUpdateRequest(voipToken: Self.iosToken), current: android)
                == "invalid_field:voip_token"
        )
        #expect(
            Self.tokenRefusal(TokenUpdateRequest(messagingToken: "zz"), current: device)
                == "invalid_field:messaging_token"
        )

        let planned = try Self.planner.tokenUpdate(
            TokenUpdateRequest(messagingToken: Self.iosToken, voipToken: ""),
            deviceID: "d1",
            current: device,
            now: 9
        )
        let update = TokenUpdate(deviceID: "d1", messaging: Self.iosToken, voip: "", at: 9)
        #expect(planned.change.writes == [.updateTokens(update)])
        #expect(planned.change.effectsWhenApplied.contains(.releaseHeld(userID: "u")))
        #expect(planned.change.refusalWhenStale?.identifier == "not_found", "deleted between the read and the write")
        #expect(planned.answer.messagingToken == Self.iosToken && planned.answer.voipToken == nil)
    }

    @Test("logout deletes the device; one that is not there is not found")
    func logout() {
        let change = Self.planner.deactivation(deviceID: "d1")
        #expect(change.writes == [.deleteDevice(id: "d1")])
        #expect(change.refusalWhenStale?.identifier == "not_found")
        #expect(change.effects.isEmpty && change.effectsWhenApplied.count == 1)
    }

    @Test(
        "a heartbeat's time-to-live: the default, the bounds, and when it runs out",
        arguments: [
            (nil, 60_000 as Int64?), (1, 1_000), (3600, 3_600_000), (0, nil), (3601, nil),
        ] as [(Int?, Int64?)]
    )
    func heartbeat(ttl: Int?, lasts: Int64?) throws {
        let device = StoreFixtures.device("d1")
        let request = HeartbeatRequest(conversation: "c1", state: .active, ttl: ttl)
        guard let lasts else {
            #expect(
                Self.refusal { () throws(RelayError) in
                    _ = try Self.planner.heartbeat(device: device, request, now: 1_000)
                } == "invalid_field:ttl"
            )
            return
        }
        let planned = try Self.planner.heartbeat(device: device, request, now: 1_000)
        let presence = PresenceRecord(
            deviceID: "d1",
            userID: "u",
            conversation: "c1",
            state: .active,
            updatedAt: 1_000,
            expiresAt: 1_000 + lasts
        )
        #expect(planned.change.writes == [.savePresence(presence)])
        #expect(planned.answer.expiresAt == 1_000 + lasts)
    }

    @Test("a permission report: its event only when the app has a webhook, woken and logged only when it changed")
    func permission() throws {
        var device = StoreFixtures.device("d1", createdAt: 3)
        device.notificationPermissionAt = 4
        var hooked = StoreFixtures.app()
        hooked.webhook = AppWebhook(url: "https://crm.example/hook", sealedSecret: [1])
        let denied = NotificationPermissionRequest(permission: .denied)

        let withHook = Self.planner.permissionReport(device: device, denied, app: hooked, now: 50)
        guard case .setNotificationPermission(let report) = try #require(withHook.change.writes.first) else {
            Issue.record("a report sets the permission")
            return
        }
        #expect(report.permission == .denied && report.at == 50)
        #expect(report.events.map(\.type) == [.deviceNotificationsDenied])
        #expect(report.events.first?.orderingKey == "device:d1")
        #expect(withHook.change.effectsWhenApplied.first == .wakeWebhooks)
        #expect(withHook.answer.changed.updatedAt == 50 && withHook.answer.unchanged.updatedAt == 4)

        let without = Self.planner.permissionReport(device: device, denied, app: StoreFixtures.app(), now: 50)
        guard case .setNotificationPermission(let quiet) = try #require(without.change.writes.first) else {
            Issue.record("a report sets the permission")
            return
        }
        #expect(quiet.events.isEmpty && !without.change.effectsWhenApplied.contains(.wakeWebhooks))
        #expect(without.change.refusalWhenStale?.identifier == "not_found")
    }

    struct AppCase: Sendable, CustomStringConvertible {
        var name: String
        var change: @Sendable (inout AppRecord) -> Void
        var refusal: String?
        var description: String { name }
    }

    static let appCases: [AppCase] = [
        AppCase(name: "the fixture", change: { _ in }, refusal: nil),
        AppCase(name: "an id with a slash", change: { $0.id = "com/example" }, refusal: "invalid_field:id"),
        AppCase(name: "a TTL of 0", change: { $0.messageTTL = 0 }, refusal: "invalid_field:message_ttl"),
        AppCase(name: "a call TTL over an hour", change: { $0.callTTL = 3601 }, refusal: "invalid_field:call_ttl"),
        AppCase(name: "priority 7", change: { $0.messagePriority = 7 }, refusal: "invalid_field:message_priority"),
        AppCase(name: "a hold of 0", change: { $0.holdFor = 0 }, refusal: "invalid_field:hold_for"),
        AppCase(name: "an empty alert title", change: { $0.alertTitle = "" }, refusal: "invalid_field:alert_title"),
        AppCase(name: "an unknown APNs key", change: { $0.apnsKey = "other" }, refusal: "invalid_field:apns_key"),
        AppCase(name: "a known APNs key", change: { $0.apnsKey = "main" }, refusal: nil),
        AppCase(
            name: "an unknown FCM account",
            change: { $0.fcmAccount = "other" },
            refusal: "invalid_field:fcm_account"
        ),
    ]

    @Test("an app's settings", arguments: appCases)
    func app(_ test: AppCase) {
        var configuration = RelayConfiguration()
        configuration.fleet.apnsKeys = ["main"]
        configuration.fleet.fcmAccounts = ["main"]
        var app = StoreFixtures.app()
        test.change(&app)
        let planner = DevicePlanner(configuration: configuration)
        #expect(Self.refusal { () throws(RelayError) in try planner.checkApp(app) } == test.refusal)
    }

    @Test("a saved app carries the webhook it was given, and none without")
    func savedApp() {
        var app = StoreFixtures.app()
        app.webhook = AppWebhook(url: "https://old.example", sealedSecret: [1])
        let without = Self.planner.saveApp(app, webhook: nil)
        #expect(without.answer.webhook == nil)
        #expect(without.change.writes == [.saveApp(without.answer)])
        #expect(without.change.effects == [.appSaved(without.answer)])
        let hook = AppWebhook(url: "https://new.example", sealedSecret: [2])
        #expect(Self.planner.saveApp(app, webhook: hook).answer.webhook == hook)
    }
}
