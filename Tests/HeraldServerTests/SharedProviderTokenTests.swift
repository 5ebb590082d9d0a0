import AsyncHTTPClient
import Crypto
import Foundation
import HeraldPush
import HeraldRelayProvider
import HeraldSandbox
import HeraldServer
import HeraldSimulation
import Logging
import ServiceLifecycle
import Testing

/// Three `herald provider` stages (as `HeraldServer.provider` starts them) with one APNs key,
/// sending through one real sandbox (HTTP/2 + TLS on loopback) whose token-update window is
/// Apple's 20 minutes. On one PostgreSQL (`--database`) they share one provider token; without
/// it each signs its own, and the sandbox refuses all but the first as
/// TooManyProviderTokenUpdates — what the sharing is for.
///
/// Runs under `scripts/with-postgres.sh` (`make unit`); without the test cluster it fails, saying so.
@Suite(.timeLimit(.minutes(2)))
struct SharedProviderTokenTests {
    static let bundleID = "com.example.chat"
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let secret = "provider-secret-0123456789"

    @Test("three providers on one database send with one token: all deliver, the sandbox saw one token and no 429")
    func sharedOnOneDatabase() async throws {
        let outcome = try await Self.threeProviders(shared: true)
        #expect(outcome.pushes.allSatisfy { $0.kind == .delivered }, "\(outcome.pushes)")
        #expect(
            outcome.counts == [SandboxProviderTokenCount(teamID: Self.teamID, keyID: Self.keyID, tokensAccepted: 1)],
            "\(outcome.counts)"
        )
    }

    @Test("without the database each provider signs its own token, and APNs refuses the second and third")
    func eachSignsAlone() async throws {
        let outcome = try await Self.threeProviders(shared: false)
        #expect(outcome.pushes.filter { $0.kind == .delivered }.count == 1, "\(outcome.pushes)")
        let count = try #require(outcome.counts.first)
        #expect(count.tokensAccepted == 1 && count.updatesRefused > 0, "\(outcome.counts)")
    }

    struct Outcome {
        let pushes: [PushOutcome]
        let counts: [SandboxProviderTokenCount]
    }

    /// Starts the sandbox and three providers (at once, so that with a database they race for
    /// the first token), sends one push through each, and reports what came of them.
    static func threeProviders(shared: Bool) async throws -> Outcome {
        let database = shared ? try postgresURL() : ""
        var logger = Logger(label: "test.shared-token")
        logger.logLevel = .critical
        let directory = NSTemporaryDirectory() + "herald-shared-token-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = P256.Signing.PrivateKey()
        let keyPath = directory + "/AuthKey_\(keyID).p8"
        try key.pemRepresentation.write(toFile: keyPath, atomically: true, encoding: .utf8)

        var configuration = SandboxConfiguration(tls: HeraldTestStack.tls)
        configuration.apnsPort = 0
        configuration.controlPort = 0
        configuration.fcmPort = 0
        configuration.apps = [SandboxApp(bundleID: bundleID, teamID: teamID)]
        configuration.keys = [SandboxKey(keyID: keyID, teamID: teamID, publicKeyPEM: key.publicKey.pemRepresentation)]
        #expect(configuration.providerTokenUpdateInterval == .seconds(20 * 60))
        let sandbox = try Sandbox(configuration: configuration, logger: logger)
        let sandboxGroup = ServiceGroup(services: [sandbox], logger: logger)
        let sandboxRun = Task { try await sandboxGroup.run() }
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        var providers: [Task<Void, any Error>] = []
        do {
            let endpoints = try await sandbox.endpoints()
            let device = try sandbox.core.registerDevice(bundleID: bundleID)
            let token = try #require(device.messagingToken)
            let schema = "token_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()

            var layer = ConfigurationFile()
            layer.apns = ConfigurationFile.APNs()
            layer.apns?.key = keyPath
            layer.apns?.teamID = teamID
            layer.apns?.url = endpoints.apnsURL
            layer.apns?.ca = endpoints.caCertificatePath
            if shared {
                layer.database = ConfigurationFile.Database()
                layer.database?.url = database + (database.contains("?") ? "&" : "?") + "schema=\(schema)"
            }
            var serverConfiguration = try HeraldConfiguration(layers: [layer])
            serverConfiguration.logLevel = .critical
            let ports = AsyncStream.makeStream(of: Int.self)
            for node in 0..<3 {
                let server = HeraldServer(
                    configuration: serverConfiguration,
                    environment: ["HERALD_PROVIDER_SECRET": secret],
                    logger: logger
                )
                let listener = ProviderListener(
                    host: "127.0.0.1",
                    port: 0,
                    secretFile: directory + "/provider.secret",
                    tokenCache: directory + "/provider-token-\(node)"
                )
                providers.append(
                    Task {
                        do {
                            try await server.provider(listener: listener) { lines in
                                ports.continuation.yield(port(in: lines) ?? 0)
                            }
                        } catch {
                            // A provider that could not start must not leave the test waiting.
                            Issue.record("provider \(node) stopped: \(error)")
                            ports.continuation.yield(0)
                            throw error
                        }
                    }
                )
            }
            var bound: [Int] = []
            for await port in ports.stream {
                bound.append(port)
                if bound.count == 3 { break }
            }
            try #require(!bound.contains(0), "a provider did not start")
            var pushes: [PushOutcome] = []
            for (node, port) in bound.enumerated() {
                let sender = RemotePushSender(
                    url: "http://127.0.0.1:\(port)",
                    secret: secret,
                    client: http,
                    logger: logger
                )
                let push = Push(
                    id: "push-\(node)",
                    token: token,
                    payload: .apns(
                        APNsPayload(
                            topic: bundleID,
                            type: .alert,
                            priority: .immediate,
                            apnsID: UUID().uuidString.lowercased(),
                            json: #"{"aps":{"alert":"node \#(node)"}}"#
                        )
                    ),
                    expiration: Int64(Date().timeIntervalSince1970) + 3600
                )
                pushes += await sender.send([push])
            }
            let counts = sandbox.core.providerTokenCounts
            for provider in providers { provider.cancel() }
            try? await http.shutdown()
            await sandboxGroup.triggerGracefulShutdown()
            _ = await sandboxRun.result
            return Outcome(pushes: pushes, counts: counts)
        } catch {
            for provider in providers { provider.cancel() }
            try? await http.shutdown()
            await sandboxGroup.triggerGracefulShutdown()
            _ = await sandboxRun.result
            throw error
        }
    }

    /// The port in the banner's `listening http://127.0.0.1:PORT/…` line.
    static func port(in lines: [String]) -> Int? {
        lines.lazy.compactMap { line -> Int? in
            guard let range = line.range(of: #"127\.0\.0\.1:\d+"#, options: .regularExpression) else { return nil }
            return Int(line[range].split(separator: ":")[1])
        }.first
    }

    static func postgresURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"] else {
            throw MissingCluster()
        }
        return url
    }

    struct MissingCluster: Error, CustomStringConvertible {
        var description: String {
            "HERALD_TEST_POSTGRES_URL is not set: run through `scripts/with-postgres.sh swift test --filter SharedProviderToken`"
        }
    }
}
