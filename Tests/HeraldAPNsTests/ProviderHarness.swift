import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldFCMCore
import HeraldSandbox
import HeraldSimulation
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

    let sandbox: Sandbox
    let client: APNsClient
    let tokens: ProviderTokenManager
    let feedback: HeraldTestStack.Feedback<APNsTokenFeedback>

    private init(
        sandbox: Sandbox,
        client: APNsClient,
        tokens: ProviderTokenManager,
        feedback: HeraldTestStack.Feedback<APNsTokenFeedback>
    ) {
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
        var options = HeraldTestStack.Options(fcmAccount: fcmAccount)
        options.bundleID = bundleID
        options.teamID = teamID
        options.keyID = keyID
        options.sandbox = setup.sandbox
        options.fcm = nil
        var apns = HeraldTestStack.APNs()
        apns.client = { configuration in
            configuration.retryBaseDelay = .milliseconds(10)
            configuration.retryMaximumDelay = .milliseconds(100)
            setup.client(&configuration)
        }
        apns.refreshAfter = setup.refreshAfter
        apns.minimumInterval = setup.minimumInterval
        options.apns = apns
        try await HeraldTestStack.with(options) { stack in
            let harness = ProviderHarness(
                sandbox: stack.sandbox,
                client: try #require(stack.apns),
                tokens: try #require(stack.apnsTokens),
                feedback: stack.apnsFeedback
            )
            try await body(harness)
        }
    }

    /// The sandbox registers one; the APNs tests send none.
    static let fcmAccount = try! FCMServiceAccount.generate(projectID: "herald-test", tokenURI: "https://unused/token")
        .account

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
