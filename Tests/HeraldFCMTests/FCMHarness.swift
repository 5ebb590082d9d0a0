import Foundation
import HeraldFCM
import HeraldFCMCore
import HeraldSandbox
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// The FCM sender against a real sandbox on loopback (HTTP/2 + TLS), both in-process.
final class FCMHarness: Sendable {
    static let projectID = "herald-test"
    static let package = "com.example.chat"

    static let tls: SandboxTLS = {
        let directory = NSTemporaryDirectory() + "herald-fcm-tests-\(getpid())"
        return try! SandboxCertificateAuthority.ensure(directory: directory)
    }()

    static let account = try! FCMServiceAccount.generate(projectID: projectID, tokenURI: "https://unused/token")

    let sandbox: Sandbox
    let client: FCMClient
    let feedback: FeedbackLog

    /// What the feedback handler was told.
    final class FeedbackLog: Sendable {
        let entries = Mutex<[FCMTokenFeedback]>([])
    }

    private init(sandbox: Sandbox, client: FCMClient, feedback: FeedbackLog) {
        self.sandbox = sandbox
        self.client = client
        self.feedback = feedback
    }

    var core: SandboxCore { sandbox.core }

    struct Setup {
        var sandbox: (inout SandboxConfiguration) -> Void = { _ in }
        var client: (inout FCMClientConfiguration) -> Void = { _ in }
        /// The account the sender uses (the sandbox always knows `FCMHarness.account`).
        var account: FCMServiceAccount = FCMHarness.account.account
    }

    static func with(_ setup: Setup = Setup(), _ body: (FCMHarness) async throws -> Void) async throws {
        var sandboxConfiguration = SandboxConfiguration(tls: tls)
        sandboxConfiguration.apnsPort = 0
        sandboxConfiguration.controlPort = 0
        sandboxConfiguration.fcmPort = 0
        sandboxConfiguration.serviceAccounts = [try SandboxServiceAccount(account.account)]
        setup.sandbox(&sandboxConfiguration)
        var logger = Logger(label: "test.fcm")
        logger.logLevel = .critical
        let sandbox = try Sandbox(configuration: sandboxConfiguration, logger: logger)
        let sandboxGroup = ServiceGroup(services: [sandbox], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await sandboxGroup.run() }
            let endpoints = try await sandbox.endpoints()
            var account = setup.account
            account.tokenURI = endpoints.tokenURL
            var configuration = FCMClientConfiguration(account: account)
            configuration.baseURL = endpoints.fcmURL
            configuration.caCertificatePath = endpoints.caCertificatePath
            configuration.retryBaseDelay = .milliseconds(10)
            configuration.retryMaximumDelay = .milliseconds(200)
            setup.client(&configuration)
            let feedback = FeedbackLog()
            let client = try FCMClient(configuration: configuration, logger: logger) { event in
                feedback.entries.withLock { $0.append(event) }
            }
            let clientGroup = ServiceGroup(services: [client], logger: logger)
            tasks.addTask { try await clientGroup.run() }
            let harness = FCMHarness(sandbox: sandbox, client: client, feedback: feedback)
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

    /// An Android device of the harness's project, with its registration token.
    func device(project: String = FCMHarness.projectID) throws -> (device: SandboxDevice, token: String) {
        let device = try core.registerDevice(bundleID: Self.package, platform: .android, projectID: project)
        return (device, try #require(device.messagingToken))
    }

    /// A data message like the relay's: about 600 bytes, expiring in an hour.
    func push(to token: String, priority: FCMMessage.Priority = .high, collapseKey: String? = nil) -> FCMPush {
        FCMPush(
            token: token,
            data: ["v": "1", "kind": "message", "sealed": String(repeating: "S", count: 560)],
            priority: priority,
            expiration: Int64(Date().timeIntervalSince1970) + 3600,
            collapseKey: collapseKey
        )
    }
}
