import AsyncHTTPClient
import Crypto
import Foundation
import HeraldCrypto
import HeraldFCMCore
import HeraldPush
import HeraldRelayProvider
import HeraldSandbox
import HeraldServer
import HeraldSimulation
import HeraldStoreSQLite
import HeraldTestSupport
import Logging
import NIOCore
import ServiceLifecycle
import Testing

/// A fleet end to end: `herald provider` configured with two APNs keys of two teams and two FCM
/// accounts of two Firebase projects, a relay sending through it, and the real sandbox playing
/// both APNs environments.
@Suite(.timeLimit(.minutes(2)))
struct FleetServeTests {
    static let appA = "com.example.alpha"
    static let appB = "com.example.beta"
    static let teamA = "TEAMAAAAAA"
    static let teamB = "TEAMBBBBBB"
    static let keyA = "KEYAAAAAAA"
    static let keyB = "KEYBBBBBBB"
    static let secret = "provider-secret-0123456789"
    static let apiKey = "fleet-api-key-0123456789"

    @Test(
        "two apps on two keys and two accounts: each push signed with its app's key, one token per key, each environment's device through its own host, a wrong environment's token failed and kept"
    )
    func fleet() async throws {
        var logger = Logger(label: "test.fleet")
        logger.logLevel =
            ProcessInfo.processInfo.environment["HERALD_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
            ?? .critical
        let directory = NSTemporaryDirectory() + "herald-fleet-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let privateA = P256.Signing.PrivateKey()
        let privateB = P256.Signing.PrivateKey()
        try privateA.pemRepresentation.write(
            toFile: "\(directory)/AuthKey_\(Self.keyA).p8",
            atomically: true,
            encoding: .utf8
        )
        try privateB.pemRepresentation.write(
            toFile: "\(directory)/AuthKey_\(Self.keyB).p8",
            atomically: true,
            encoding: .utf8
        )
        var (accountA, _) = try FCMServiceAccount.generate(projectID: "project-alpha", tokenURI: "https://unset")
        var (accountB, _) = try FCMServiceAccount.generate(projectID: "project-beta", tokenURI: "https://unset")

        var configuration = SandboxConfiguration(tls: HeraldTestStack.tls)
        configuration.apnsPort = 0
        configuration.apnsProductionPort = 0
        configuration.controlPort = 0
        configuration.fcmPort = 0
        configuration.apps = [
            SandboxApp(bundleID: Self.appA, teamID: Self.teamA), SandboxApp(bundleID: Self.appB, teamID: Self.teamB),
        ]
        configuration.keys = [
            SandboxKey(keyID: Self.keyA, teamID: Self.teamA, publicKeyPEM: privateA.publicKey.pemRepresentation),
            SandboxKey(keyID: Self.keyB, teamID: Self.teamB, publicKeyPEM: privateB.publicKey.pemRepresentation),
        ]
        configuration.serviceAccounts = [try SandboxServiceAccount(accountA), try SandboxServiceAccount(accountB)]
        let sandbox = try Sandbox(configuration: configuration, logger: logger)
        let sandboxGroup = ServiceGroup(services: [sandbox], logger: logger)
        let sandboxRun = Task { try await sandboxGroup.run() }
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        var provider: Task<Void, any Error>?
        var relayGroup: ServiceGroup?
        var relayRun: Task<Void, any Error>?
        // The provider stops with the test process, as in the other provider tests.
        defer { provider?.cancel() }
        do {
            let endpoints = try await sandbox.endpoints()
            let production = try #require(endpoints.apnsProductionURL)
            accountA.tokenURI = endpoints.tokenURL
            accountB.tokenURI = endpoints.tokenURL
            let encoder = JSONEncoder()
            try encoder.encode(accountA).write(to: URL(filePath: "\(directory)/alpha.json"))
            try encoder.encode(accountB).write(to: URL(filePath: "\(directory)/beta.json"))
            let ca = endpoints.caCertificatePath
            let yaml = """
                apns_keys:
                  - {name: alpha, key: \(directory)/AuthKey_\(Self.keyA).p8, team_id: \(Self.teamA), ca: \(ca),
                     development_url: "\(endpoints.apnsURL)", production_url: "\(production)"}
                  - {name: beta, key: \(directory)/AuthKey_\(Self.keyB).p8, team_id: \(Self.teamB), ca: \(ca),
                     development_url: "\(endpoints.apnsURL)", production_url: "\(production)"}
                fcm_accounts:
                  - {name: alpha-project, service_account: \(directory)/alpha.json, url: "\(endpoints.fcmURL)", ca: \(ca)}
                  - {name: beta-project, service_account: \(directory)/beta.json, url: "\(endpoints.fcmURL)", ca: \(ca)}
                apps:
                  - {id: \(Self.appA), team_id: \(Self.teamA), apns_key: alpha, fcm_account: alpha-project}
                  - {id: \(Self.appB), team_id: \(Self.teamB), apns_key: beta, fcm_account: beta-project}
                """
            let file = try ConfigurationFile.parse(Data(yaml.utf8), format: .yaml, path: "fleet.yaml")
            var serverConfiguration = try HeraldConfiguration(layers: [file])
            serverConfiguration.logLevel = logger.logLevel
            // `herald provider` with the fleet's keys and accounts, as configured...
            let server = HeraldServer(
                configuration: serverConfiguration,
                environment: ["HERALD_PROVIDER_SECRET": Self.secret],
                logger: logger
            )
            let ports = AsyncStream.makeStream(of: Int.self)
            let listener = ProviderListener(
                host: "127.0.0.1",
                port: 0,
                secretFile: "\(directory)/provider.secret",
                tokenCache: "\(directory)/provider-token"
            )
            provider = Task {
                do {
                    try await server.provider(listener: listener) { lines in
                        ports.continuation.yield(SharedProviderTokenTests.port(in: lines) ?? 0)
                    }
                } catch {
                    ports.continuation.yield(0)
                    throw error
                }
            }
            var bound = ports.stream.makeAsyncIterator()
            let providerPort = try #require(await bound.next())
            try #require(providerPort != 0, "herald provider did not start")
            // ...and a relay sending through it over the batch API, which carries each push's
            // key, environment and account.
            let store = try SQLiteStore(
                configuration: SQLiteStore.Configuration(path: "\(directory)/herald.sqlite"),
                logger: logger
            )
            var parts = RelayNode.Parts(
                store: store,
                sender: RemotePushSender(
                    url: "http://127.0.0.1:\(providerPort)",
                    secret: Self.secret,
                    client: http,
                    logger: logger
                ),
                masterKey: MasterKey.generate(),
                apiKey: Self.apiKey
            )
            parts.relay.fleet.apnsKeys = Set(serverConfiguration.apnsKeys.map(\.name))
            parts.relay.fleet.fcmAccounts = Set(serverConfiguration.fcmAccounts.map(\.name))
            parts.relay.fleet.defaultAPNsEnvironment = .development
            parts.dispatcher.idlePoll = .milliseconds(20)
            let relayPorts = AsyncStream.makeStream(of: Int.self)
            let node = try RelayNode(parts, logger: logger) { relayPorts.continuation.yield($0) }
            for app in serverConfiguration.apps { try await node.relay.activation.saveApp(app) }
            relayGroup = ServiceGroup(services: node.services, logger: logger)
            relayRun = Task { [relayGroup] in try await relayGroup?.run() }
            var relayBound = relayPorts.stream.makeAsyncIterator()
            let port = try #require(await relayBound.next())
            let apiKey = Self.apiKey
            let relay = Relay(http: http, base: "http://127.0.0.1:\(port)", apiKey: apiKey)

            // An app naming a key or account that is not configured is refused, naming it.
            let refused = try await relay.call(
                "PUT",
                "/v1/apps/com.example.gamma",
                ["team_id": "TEAMCCCCCC", "apns_key": "gamma"]
            )
            #expect(refused.status == 400)
            #expect(refused.text.contains("apns_key") && refused.text.contains("alpha, beta"), "\(refused.text)")

            // Phones: alpha in development and in production, beta in development, an Android
            // phone in each project.
            let alphaDevelopment = try sandbox.core.registerDevice(bundleID: Self.appA)
            let alphaProduction = try sandbox.core.registerDevice(bundleID: Self.appA, apnsEnvironment: .production)
            let betaDevelopment = try sandbox.core.registerDevice(bundleID: Self.appB)
            let alphaAndroid = try sandbox.core.registerDevice(
                bundleID: Self.appA,
                platform: .android,
                projectID: "project-alpha"
            )
            let betaAndroid = try sandbox.core.registerDevice(
                bundleID: Self.appB,
                platform: .android,
                projectID: "project-beta"
            )
            #expect(alphaProduction.apnsEnvironment == .production && alphaDevelopment.apnsEnvironment == .development)
            let alphaDevID = try await relay.activate("u-alpha-dev", Self.appA, alphaDevelopment, environment: nil)
            let alphaProdID = try await relay.activate(
                "u-alpha-prod",
                Self.appA,
                alphaProduction,
                environment: .production
            )
            _ = try await relay.activate("u-beta-dev", Self.appB, betaDevelopment, environment: .development)
            _ = try await relay.activate("u-alpha-android", Self.appA, alphaAndroid, environment: nil)
            _ = try await relay.activate("u-beta-android", Self.appB, betaAndroid, environment: nil)
            // A development build's token that the device (wrongly) says is a production one.
            let mislabelled = try sandbox.core.registerDevice(bundleID: Self.appA)
            let mislabelledID = try await relay.activate(
                "u-mislabelled",
                Self.appA,
                mislabelled,
                environment: .production
            )

            let shown = try await relay.call("GET", "/v1/devices/\(alphaDevID)")
            #expect(shown.json["apns_environment"] as? String == "development", "the relay's default")
            let shownProduction = try await relay.call("GET", "/v1/devices/\(alphaProdID)")
            #expect(shownProduction.json["apns_environment"] as? String == "production")

            var states: [String: [String: Any]] = [:]
            for user in [
                "u-alpha-dev", "u-alpha-prod", "u-beta-dev", "u-alpha-android", "u-beta-android", "u-mislabelled",
            ] {
                let pushID = try await relay.message(to: user)
                states[user] = try await relay.settled(pushID)
            }
            for user in ["u-alpha-dev", "u-alpha-prod", "u-beta-dev", "u-alpha-android", "u-beta-android"] {
                #expect(states[user]?["state"] as? String == "delivered", "\(user): \(states[user] ?? [:])")
            }
            let failed = try #require(states["u-mislabelled"])
            #expect(failed["state"] as? String == "failed")
            #expect((failed["reason"] as? String)?.hasPrefix("BadDeviceToken: APNs' production environment") == true)
            #expect((failed["explanation"] as? String)?.contains("kept the token") == true)
            let kept = try await relay.call("GET", "/v1/devices/\(mislabelledID)")
            #expect(kept.json["messaging_token"] as? String == mislabelled.messagingToken, "the token is kept")

            // What the sandbox saw: each app's pushes signed with its team's key, each device's
            // through the host of its environment.
            let records = sandbox.core.inspection()
            func record(_ device: SandboxDevice) -> SandboxInspectionRecord? {
                records.first { $0.token == device.messagingToken }
            }
            let alphaDev = try #require(record(alphaDevelopment))
            #expect(
                alphaDev.keyID == Self.keyA && alphaDev.teamID == Self.teamA && alphaDev.environment == .development
            )
            let alphaProd = try #require(record(alphaProduction))
            #expect(alphaProd.keyID == Self.keyA && alphaProd.environment == .production && alphaProd.status == 200)
            let betaDev = try #require(record(betaDevelopment))
            #expect(betaDev.keyID == Self.keyB && betaDev.teamID == Self.teamB && betaDev.status == 200)
            let wrong = try #require(record(mislabelled))
            #expect(wrong.environment == .production && wrong.status == 400 && wrong.reason == "BadDeviceToken")
            // One provider token per key, shared by both environments' hosts.
            let counts = sandbox.core.providerTokenCounts.sorted { $0.keyID < $1.keyID }
            #expect(counts.map(\.keyID) == [Self.keyA, Self.keyB], "\(counts)")
            #expect(counts.allSatisfy { $0.tokensAccepted == 1 && $0.updatesRefused == 0 }, "\(counts)")
            // Each Android push sent by its project's account (the project is in the path).
            let fcm = sandbox.core.fcmInspection()
            #expect(
                fcm.contains {
                    $0.token == alphaAndroid.messagingToken && $0.project == "project-alpha" && $0.status == 200
                }
            )
            #expect(
                fcm.contains {
                    $0.token == betaAndroid.messagingToken && $0.project == "project-beta" && $0.status == 200
                }
            )
        } catch {
            await relayGroup?.triggerGracefulShutdown()
            _ = await relayRun?.result
            try? await http.shutdown()
            await sandboxGroup.triggerGracefulShutdown()
            _ = await sandboxRun.result
            throw error
        }
        await relayGroup?.triggerGracefulShutdown()
        _ = await relayRun?.result
        try await http.shutdown()
        await sandboxGroup.triggerGracefulShutdown()
        _ = await sandboxRun.result
    }

    /// The relay's API, as a backend and the phones call it.
    struct Relay {
        let http: HTTPClient
        let base: String
        let apiKey: String

        struct Answer {
            var status: Int
            var text: String
            var json: [String: Any]
        }

        func call(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Answer {
            var request = HTTPClientRequest(url: base + path)
            request.method = .init(rawValue: method)
            request.headers.add(name: "authorization", value: "Bearer \(apiKey)")
            if let body {
                request.headers.add(name: "content-type", value: "application/json")
                request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
            }
            let response = try await http.execute(request, timeout: .seconds(10))
            let bytes = try await response.body.collect(upTo: 1 << 20)
            let text = String(buffer: bytes)
            let json = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
            return Answer(status: Int(response.status.code), text: text, json: json)
        }

        func activate(
            _ user: String,
            _ app: String,
            _ device: SandboxDevice,
            environment: APNsEnvironment?
        ) async throws -> String {
            var body: [String: Any] = [
                "user_id": user, "app": app, "platform": device.platform.rawValue,
                "public_key": KeyPair.generate().publicKey.base64,
                "messaging_token": device.messagingToken ?? "",
            ]
            if let voip = device.voipToken { body["voip_token"] = voip }
            if let environment { body["apns_environment"] = environment.rawValue }
            let answer = try await call("POST", "/v1/activations", body)
            try #require(answer.status == 201, "activation of \(user): \(answer.text)")
            return try #require(answer.json["device_id"] as? String)
        }

        func message(to user: String) async throws -> String {
            let answer = try await call(
                "POST",
                "/v1/messages",
                ["to": user, "from": ["id": "agent-7", "name": "Dana"], "conversation": "c-1", "text": "hello"]
            )
            let pushes = try #require(answer.json["pushes"] as? [[String: Any]], "\(answer.text)")
            return try #require(pushes.first?["push_id"] as? String, "\(answer.text)")
        }

        /// The push's status once it is final (polled: the relay's API offers no signal for it).
        func settled(_ pushID: String) async throws -> [String: Any] {
            try await eventually("push \(pushID) to settle", timeout: .seconds(20), every: .milliseconds(50)) {
                let status = try await call("GET", "/v1/pushes/\(pushID)").json
                guard let state = status["state"] as? String, !["queued", "sending"].contains(state) else { return nil }
                return status
            }
        }
    }
}
