import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldSandbox
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

/// The provider's client against a real sandbox on loopback (HTTP/2 + TLS), both in-process.
final class ProviderHarness: Sendable {
    static let bundleID = "com.example.chat"
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"

    static let tls: SandboxTLS = {
        let directory = NSTemporaryDirectory() + "herald-provider-tests-\(getpid())"
        return try! SandboxCertificateAuthority.ensure(directory: directory)
    }()

    let sandbox: Sandbox
    let client: APNsClient
    let tokens: ProviderTokenManager
    let feedback: FeedbackLog

    private init(sandbox: Sandbox, client: APNsClient, tokens: ProviderTokenManager, feedback: FeedbackLog) {
        self.sandbox = sandbox
        self.client = client
        self.tokens = tokens
        self.feedback = feedback
    }

    var core: SandboxCore { sandbox.core }

    struct Setup {
        var sandbox: (inout SandboxConfiguration) -> Void = { _ in }
        var client: (inout APNsClientConfiguration) -> Void = { _ in }
        var refreshAfter: Duration = ProviderTokenManager.defaultRefreshAfter
        var minimumInterval: Duration = ProviderTokenManager.defaultMinimumInterval
    }

    static func with(_ setup: Setup = Setup(), _ body: (ProviderHarness) async throws -> Void) async throws {
        let key = P256.Signing.PrivateKey()
        var sandboxConfiguration = SandboxConfiguration(tls: tls)
        sandboxConfiguration.apnsPort = 0
        sandboxConfiguration.controlPort = 0
        sandboxConfiguration.fcmPort = 0
        sandboxConfiguration.apps = [SandboxApp(bundleID: bundleID, teamID: teamID)]
        sandboxConfiguration.keys = [
            SandboxKey(keyID: keyID, teamID: teamID, publicKeyPEM: key.publicKey.pemRepresentation)
        ]
        setup.sandbox(&sandboxConfiguration)
        var logger = Logger(label: "test.provider")
        logger.logLevel = .critical
        let sandbox = try Sandbox(configuration: sandboxConfiguration, logger: logger)
        let sandboxGroup = ServiceGroup(services: [sandbox], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await sandboxGroup.run() }
            let endpoints = try await sandbox.endpoints()

            var clientConfiguration = try APNsClientConfiguration(url: endpoints.apnsURL)
            clientConfiguration.caCertificatePath = endpoints.caCertificatePath
            clientConfiguration.serverHostname = "localhost"
            clientConfiguration.retryBaseDelay = .milliseconds(10)
            clientConfiguration.retryMaximumDelay = .milliseconds(100)
            setup.client(&clientConfiguration)
            let tokens = ProviderTokenManager(
                signer: ProviderTokenSigner(privateKey: key, keyID: keyID, teamID: teamID),
                refreshAfter: setup.refreshAfter,
                minimumInterval: setup.minimumInterval,
                now: { Int64(Date().timeIntervalSince1970) }
            )
            let feedback = FeedbackLog()
            let client = try APNsClient(configuration: clientConfiguration, tokens: tokens, logger: logger) { event in
                feedback.entries.withLock { $0.append(event) }
            }
            let clientGroup = ServiceGroup(services: [client], logger: logger)
            tasks.addTask { try await clientGroup.run() }
            let harness = ProviderHarness(sandbox: sandbox, client: client, tokens: tokens, feedback: feedback)
            do {
                try await body(harness)
            } catch {
                await clientGroup.triggerGracefulShutdown()
                await sandboxGroup.triggerGracefulShutdown()
                throw error
            }
            await clientGroup.triggerGracefulShutdown()
            await sandboxGroup.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    func device() throws -> SandboxDevice {
        try core.registerDevice(bundleID: Self.bundleID)
    }

    /// An alert like the relay's: about 500 bytes.
    func alert(to token: String, expiration: Int64? = nil) -> APNsNotification {
        .alert(
            to: token,
            bundleID: Self.bundleID,
            payload: ByteBuffer(
                string:
                    #"{"aps":{"alert":{"title":"New message","body":"You have a new message"},"mutable-content":1},"e":"\#(String(repeating: "A", count: 400))"}"#
            ),
            expiration: expiration
        )
    }

    func voip(to token: String) -> APNsNotification {
        .voip(
            to: token,
            bundleID: Self.bundleID,
            payload: ByteBuffer(string: #"{"aps":{},"c":"\#(String(repeating: "B", count: 900))"}"#),
            expiration: Int64(Date().timeIntervalSince1970) + 30
        )
    }
}

/// What the feedback handler was told.
final class FeedbackLog: Sendable {
    let entries = Mutex<[APNsTokenFeedback]>([])

    func withLock<R>(_ body: (inout [APNsTokenFeedback]) -> R) -> R {
        entries.withLock { body(&$0) }
    }
}
