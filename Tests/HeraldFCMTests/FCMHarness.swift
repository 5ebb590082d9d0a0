import Foundation
import HeraldFCM
import HeraldFCMCore
import HeraldSandbox
import HeraldSimulation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// The FCM sender against a real sandbox on loopback (HTTP/2 + TLS), both in-process.
final class FCMHarness: Sendable {
    static let projectID = "herald-test"
    static let package = "com.example.chat"

    static let account = try! FCMServiceAccount.generate(projectID: projectID, tokenURI: "https://unused/token")

    let sandbox: Sandbox
    let client: FCMClient
    let feedback: HeraldTestStack.Feedback<FCMTokenFeedback>

    private init(sandbox: Sandbox, client: FCMClient, feedback: HeraldTestStack.Feedback<FCMTokenFeedback>) {
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
        var options = HeraldTestStack.Options(fcmAccount: account.account)
        options.sandbox = setup.sandbox
        options.apns = nil
        var fcm = HeraldTestStack.FCM()
        fcm.account = setup.account
        fcm.client = { configuration in
            configuration.retryBaseDelay = .milliseconds(10)
            configuration.retryMaximumDelay = .milliseconds(200)
            setup.client(&configuration)
        }
        options.fcm = fcm
        try await HeraldTestStack.with(options) { stack in
            try await body(
                FCMHarness(sandbox: stack.sandbox, client: try #require(stack.fcm), feedback: stack.fcmFeedback)
            )
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
