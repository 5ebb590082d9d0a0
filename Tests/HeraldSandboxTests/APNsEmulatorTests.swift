import Crypto
import HeraldAPNsCore
import Synchronization
import Testing

@testable import HeraldSandbox

/// The APNs emulator over a stand-in device directory: what it asks the devices, what it hands
/// them, and the provider-token rules, without a listener.
@Suite(.timeLimit(.minutes(1)))
struct APNsEmulatorTests {
    static let bundleID = "com.example.chat"
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let token = String(repeating: "ab", count: 32)

    /// One app and one messaging token; records what it is handed and answers with `answer`.
    final class StandInDevices: APNsDeviceDirectory {
        struct Handed: Sendable {
            let notification: SandboxNotification
            let keepUntil: Int64?
        }

        private let state = Mutex<(handed: [Handed], answer: DeviceDelivery)>(([], .stored))

        var handed: [Handed] { state.withLock { $0.handed } }

        func answer(_ delivery: DeviceDelivery) {
            state.withLock { $0.answer = delivery }
        }

        func team(ofApp bundleID: String) -> String? {
            bundleID == APNsEmulatorTests.bundleID ? APNsEmulatorTests.teamID : nil
        }

        func apnsToken(_ token: String) -> APNsTokenRecord? {
            token == APNsEmulatorTests.token
                ? APNsTokenRecord(deviceID: "dev-1", topic: APNsEmulatorTests.bundleID, kind: .messaging) : nil
        }

        func deliver(
            _ notification: SandboxNotification,
            keepUntil: Int64?
        ) -> (delivery: DeviceDelivery, handoff: DeviceHandoff) {
            let delivery = state.withLock {
                $0.handed.append(Handed(notification: notification, keepUntil: keepUntil))
                return $0.answer
            }
            return (delivery, .none)
        }
    }

    struct Setup {
        let emulator: APNsEmulator
        let devices: StandInDevices
        let signer: ProviderTokenSigner
    }

    static func setup(_ change: (inout SandboxConfiguration) -> Void = { _ in }) throws -> Setup {
        let key = P256.Signing.PrivateKey()
        var configuration = SandboxConfiguration(
            tls: SandboxTLS(certificateChainPath: "", privateKeyPath: "", caCertificatePath: "")
        )
        configuration.keys = [SandboxKey(keyID: keyID, teamID: teamID, publicKeyPEM: key.publicKey.pemRepresentation)]
        change(&configuration)
        let devices = StandInDevices()
        let emulator = try APNsEmulator(
            configuration: configuration,
            devices: devices,
            log: InspectionLog(capacity: 10)
        )
        return Setup(
            emulator: emulator,
            devices: devices,
            signer: ProviderTokenSigner(privateKey: key, keyID: keyID, teamID: teamID)
        )
    }

    static func request(providerToken: String, expiration: Int64? = nil) -> SandboxAPNsRequest {
        var request = SandboxAPNsRequest()
        request.method = "POST"
        request.path = "/3/device/\(token)"
        request.authorization = "bearer \(providerToken)"
        request.topic = bundleID
        request.expiration = expiration.map(String.init)
        request.body = Array(#"{"aps":{}}"#.utf8)
        return request
    }

    static func response(_ outcome: SandboxAPNsOutcome) -> SandboxAPNsResponse? {
        guard case .respond(let response, _) = outcome else { return nil }
        return response
    }

    @Test func anAcceptedPushIsHandedOverWithHowLongToKeepIt() throws {
        let setup = try Self.setup { $0.defaultStorage = .seconds(60) }
        let jwt = try setup.signer.makeToken(issuedAt: SandboxHarness.now()).text
        let future = SandboxHarness.now() + 600
        var connection = SandboxConnectionState()
        let before = SandboxClock().epochMilliseconds
        for expiration in [nil, future, 0, 1] as [Int64?] {
            let answer = Self.response(
                setup.emulator.handle(Self.request(providerToken: jwt, expiration: expiration), connection: &connection)
            )
            #expect(answer?.status == 200)
        }
        let keepUntil = setup.devices.handed.map(\.keepUntil)
        #expect(keepUntil.count == 4)
        // No expiration: the default storage; a future one: itself; 0 and the past: nothing.
        #expect((keepUntil[0] ?? 0) >= before + 60_000)
        #expect(keepUntil[1] == future * 1000)
        #expect(keepUntil[2] == nil && keepUntil[3] == nil)
        #expect(setup.devices.handed.allSatisfy { $0.notification.token == Self.token })

        setup.devices.answer(.notKept)
        _ = setup.emulator.handle(Self.request(providerToken: jwt, expiration: 0), connection: &connection)
        _ = setup.emulator.handle(Self.request(providerToken: jwt, expiration: 1), connection: &connection)
        let deliveries = setup.emulator.log.records.map(\.delivery)
        #expect(
            deliveries.suffix(2) == [
                "discarded: device offline and apns-expiration is 0", "discarded: expired while the device was offline",
            ]
        )
    }

    @Test func aTokenUninstalledBeforeDeliveryIsAnsweredUnregistered() throws {
        let setup = try Self.setup()
        let jwt = try setup.signer.makeToken(issuedAt: SandboxHarness.now()).text
        setup.devices.answer(.refused(.unregistered(at: 1_700_000_000_000)))
        var connection = SandboxConnectionState()
        let answer = Self.response(setup.emulator.handle(Self.request(providerToken: jwt), connection: &connection))
        #expect(answer?.status == 410)
        #expect(answer?.reason == .unregistered)
        #expect(answer?.timestamp == 1_700_000_000_000)
        #expect(answer?.uniqueID == nil)
        let record = try #require(setup.emulator.log.records.last)
        #expect(record.outcome == "rejected")
        #expect(record.delivery == nil)
    }

    @Test func aNewProviderTokenWithinTheIntervalIsTooManyUpdates() throws {
        let setup = try Self.setup { $0.providerTokenUpdateInterval = .seconds(3600) }
        let now = SandboxHarness.now()
        let first = try setup.signer.makeToken(issuedAt: now - 10).text
        let second = try setup.signer.makeToken(issuedAt: now).text
        var connection = SandboxConnectionState()
        #expect(
            Self.response(setup.emulator.handle(Self.request(providerToken: first), connection: &connection))?.status
                == 200
        )
        var other = SandboxConnectionState()
        let refused = Self.response(setup.emulator.handle(Self.request(providerToken: second), connection: &other))
        #expect(refused?.status == 429)
        #expect(refused?.reason == .tooManyProviderTokenUpdates)
        #expect(!other.authenticated)
        // The refusal is not cached (it is checked again), the first token stays usable.
        _ = setup.emulator.handle(Self.request(providerToken: second), connection: &other)
        #expect(setup.emulator.providerTokenVerifications == 3)
        #expect(
            Self.response(setup.emulator.handle(Self.request(providerToken: first), connection: &connection))?.status
                == 200
        )
        #expect(setup.emulator.providerTokenVerifications == 3)
    }

    @Test func topicsOfUnknownAppsAreBadTopicsAndReachNoDevice() throws {
        let setup = try Self.setup()
        let jwt = try setup.signer.makeToken(issuedAt: SandboxHarness.now()).text
        var connection = SandboxConnectionState()
        var request = Self.request(providerToken: jwt)
        request.topic = "com.example.unknown"
        #expect(Self.response(setup.emulator.handle(request, connection: &connection))?.reason == .badTopic)
        request.topic = Self.bundleID + ".voip"
        request.pushType = "alert"
        #expect(Self.response(setup.emulator.handle(request, connection: &connection))?.reason == .badTopic)
        #expect(setup.devices.handed.isEmpty)
    }
}
