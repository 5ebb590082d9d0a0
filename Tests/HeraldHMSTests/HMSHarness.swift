import Foundation
import HeraldHMS
import HeraldHMSCore
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import HeraldSandbox

/// The Push Kit sender against a real sandbox on loopback (HTTP/2 + TLS), both in-process.
final class HMSHarness: Sendable {
    static let appID = "104857600"
    static let secret = String(repeating: "5ec2e7", count: 11)
    static let package = "com.example.chat"
    /// The sandbox's development CA, made once per process under the temporary directory.
    static let tls: SandboxTLS = {
        let directory = NSTemporaryDirectory() + "herald-hms-tests-\(getpid())"
        // A CA that cannot be made leaves nothing to test against.
        return try! SandboxCertificateAuthority.ensure(directory: directory)
    }()
    static let logger = Logger(label: "hms-test") { _ in SwiftLogNoOpLogHandler() }

    let sandbox: Sandbox
    let client: HMSClient
    let endpoints: SandboxEndpoints
    private let dead = Mutex<[HMSTokenFeedback]>([])

    private init(sandbox: Sandbox, client: HMSClient, endpoints: SandboxEndpoints) {
        self.sandbox = sandbox
        self.client = client
        self.endpoints = endpoints
    }

    var core: SandboxCore { sandbox.core }
    /// What the feedback handler was told so far.
    var feedback: [HMSTokenFeedback] { dead.withLock { $0 } }

    /// Starts the sandbox (knowing the harness's app) and a sender for it, runs `body`, and stops
    /// both gracefully.
    static func with(
        secret: String = HMSHarness.secret,
        retryMaximumDelay: Duration = .milliseconds(200),
        _ body: (HMSHarness) async throws -> Void
    ) async throws {
        var settings = SandboxConfiguration(tls: tls)
        (settings.apnsPort, settings.controlPort, settings.fcmPort, settings.hmsPort) = (0, 0, 0, 0)
        settings.hmsApps = [SandboxHMSApp(appID: appID, clientSecret: HMSHarness.secret)]
        let sandbox = try Sandbox(configuration: settings, logger: logger)
        let sandboxGroup = ServiceGroup(services: [sandbox], logger: logger)
        let sandboxRunning = Task { try await sandboxGroup.run() }
        defer { sandboxRunning.cancel() }
        let endpoints = try await sandbox.endpoints()
        var configuration = HMSClientConfiguration(
            credentials: HMSAppCredentials(appID: appID, clientSecret: secret, tokenURL: endpoints.hmsTokenURL)
        )
        configuration.baseURL = endpoints.hmsURL
        configuration.caCertificatePath = endpoints.caCertificatePath
        configuration.retryBaseDelay = .milliseconds(10)
        configuration.retryMaximumDelay = retryMaximumDelay
        let box = Mutex<HMSHarness?>(nil)
        let client = try HMSClient(configuration: configuration, logger: logger) { event in
            box.withLock { $0 }?.dead.withLock { $0.append(event) }
        }
        let harness = HMSHarness(sandbox: sandbox, client: client, endpoints: endpoints)
        box.withLock { $0 = harness }
        let clientGroup = ServiceGroup(services: [client], logger: logger)
        let clientRunning = Task { try await clientGroup.run() }
        let outcome = await Result(catching: { try await body(harness) })
        await clientGroup.triggerGracefulShutdown()
        try await clientRunning.value
        await sandboxGroup.triggerGracefulShutdown()
        try await sandboxRunning.value
        try outcome.get()
    }

    /// A Huawei device of the harness's app, with its Push Kit token.
    func device() throws -> (device: SandboxDevice, token: String) {
        let device = try core.registerDevice(bundleID: Self.package, platform: .huawei)
        return (device, try #require(device.messagingToken))
    }

    /// A data message like the relay's: about 600 bytes, expiring in `seconds`.
    func push(
        to token: String,
        urgency: HMSUrgency = .high,
        collapseKey: String? = nil,
        expiresIn seconds: Int64 = 3600
    ) -> HMSPush {
        HMSPush(
            token: token,
            payload: HMSPayload(
                package: Self.package,
                urgency: urgency,
                data: ["v": "1", "kind": "message", "sealed": String(repeating: "S", count: 560)]
            ),
            expiration: Int64(Date().timeIntervalSince1970) + seconds,
            collapseKey: collapseKey
        )
    }
}

extension Result where Failure == any Error {
    /// The outcome of an async body.
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}

extension HMSResult {
    var isDelivered: Bool {
        if case .delivered = self { return true }
        return false
    }
}
