import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldCrypto
import HeraldFCM
import HeraldFCMCore
import HeraldProvider
import HeraldPush
import HeraldRelay
import HeraldRelayAPI
import HeraldRelayHTTP
import HeraldRelayProvider
import HeraldSandbox
import HeraldServer
import HeraldStore
import HeraldStoreSQLite
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Real time plus an offset that a simulation advances, so "ten minutes later" takes no time.
final class SimulatedClock: Sendable {
    private let offset = Atomic<Int64>(0)

    /// Milliseconds since the epoch, simulated.
    func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) + offset.load(ordering: .relaxed) }

    func advance(milliseconds: Int64) { offset.add(milliseconds, ordering: .relaxed) }
}

/// Where a simulation's relay and sandbox are.
struct SimulationEndpoints: Sendable {
    var relayURL: String
    var sandboxURL: String
    var apiKey: String
    var bundleID: String
}

/// Sandbox (APNs and FCM), provider and relay in this process, on loopback ports the system picks, in a
/// temporary directory: what `herald simulate` runs against when no URLs are given.
enum SimulationStack {
    static let bundleID = "com.example.herald"

    static func with<T: Sendable>(
        clock: SimulatedClock,
        logger: Logger,
        _ body: (SimulationEndpoints) async throws -> T
    ) async throws -> T {
        let directory = NSTemporaryDirectory() + "herald-simulate-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let teamID = AppleIdentifier.random()
        let keyID = AppleIdentifier.random()
        let key = P256.Signing.PrivateKey()
        var sandboxConfiguration = SandboxConfiguration(
            tls: try SandboxCertificateAuthority.ensure(directory: directory + "/keys")
        )
        sandboxConfiguration.apnsPort = 0
        sandboxConfiguration.controlPort = 0
        sandboxConfiguration.fcmPort = 0
        let (fcmAccount, _) = try FCMServiceAccount.generate(
            projectID: "herald-simulate",
            tokenURI: "https://unused/token"
        )
        sandboxConfiguration.serviceAccounts = [try SandboxServiceAccount(fcmAccount)]
        sandboxConfiguration.apps = [SandboxApp(bundleID: bundleID, teamID: teamID)]
        sandboxConfiguration.keys = [
            SandboxKey(keyID: keyID, teamID: teamID, publicKeyPEM: key.publicKey.pemRepresentation)
        ]
        let sandbox = try Sandbox(configuration: sandboxConfiguration, logger: logger)
        let sandboxGroup = ServiceGroup(services: [sandbox], logger: logger)
        return try await withThrowingTaskGroup(of: Void.self, returning: T.self) { tasks in
            tasks.addTask { try await sandboxGroup.run() }
            let endpoints = try await sandbox.endpoints()
            var clientConfiguration = try APNsClientConfiguration(url: endpoints.apnsURL)
            clientConfiguration.caCertificatePath = endpoints.caCertificatePath
            clientConfiguration.serverHostname = "localhost"
            let tokens = ProviderTokenManager(
                signer: ProviderTokenSigner(privateKey: key, keyID: keyID, teamID: teamID),
                now: { Int64(Date().timeIntervalSince1970) }
            )
            let client = try APNsClient(configuration: clientConfiguration, tokens: tokens, logger: logger)
            var account = fcmAccount
            account.tokenURI = endpoints.tokenURL
            var fcmConfiguration = FCMClientConfiguration(account: account)
            fcmConfiguration.baseURL = endpoints.fcmURL
            fcmConfiguration.caCertificatePath = endpoints.caCertificatePath
            let fcmClient = try FCMClient(configuration: fcmConfiguration, logger: logger)
            let store = try SQLiteStore(
                configuration: .init(path: directory + "/data/herald.sqlite"),
                logger: logger
            )
            let dispatcher = Dispatcher(
                store: store,
                sender: ProviderStage(apns: client, fcm: fcmClient),
                logger: logger,
                now: { clock.now() }
            )
            let relay = Relay(
                store: store,
                masterKey: MasterKey.generate(),
                logger: logger,
                now: { clock.now() },
                onAccepted: { dispatcher.wake() }
            )
            try await relay.activation.saveApp(AppRecord(id: bundleID, teamID: teamID))
            let apiKey = "sim_" + ByteEncoding.hex(SecureBytes.random(count: 16).copyBytes())
            let ports = AsyncStream.makeStream(of: Int.self)
            let router = RelayHTTPService.router(relay: relay, configuration: RelayHTTPConfiguration(apiKey: apiKey))
            let app = Application(
                router: router,
                server: .http1WebSocketUpgrade(webSocketRouter: router),
                configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "herald-simulate"),
                onServerRunning: { channel in ports.continuation.yield(channel.localAddress?.port ?? 0) },
                logger: logger
            )
            let relayGroup = ServiceGroup(services: [client, fcmClient, dispatcher, app], logger: logger)
            tasks.addTask { try await relayGroup.run() }
            var iterator = ports.stream.makeAsyncIterator()
            let port = await iterator.next() ?? 0
            let simulation = SimulationEndpoints(
                relayURL: "http://127.0.0.1:\(port)",
                sandboxURL: endpoints.controlURL,
                apiKey: apiKey,
                bundleID: bundleID
            )
            let result: T
            do {
                result = try await body(simulation)
            } catch {
                await relayGroup.triggerGracefulShutdown()
                await sandboxGroup.triggerGracefulShutdown()
                try? await tasks.waitForAll()
                throw error
            }
            await relayGroup.triggerGracefulShutdown()
            await sandboxGroup.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return result
        }
    }
}
