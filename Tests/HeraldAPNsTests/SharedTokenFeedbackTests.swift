import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldSandbox
import HeraldSimulation
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

/// A shared provider token (`ProviderTokenManager.Coordination.shared`) against the real sandbox:
/// the client tells the coordinator of every answer a new token might mend, and never signs one
/// itself.
@Suite(.timeLimit(.minutes(1)))
struct SharedTokenFeedbackTests {
    @Test(
        "InvalidProviderToken, TooManyProviderTokenUpdates and ExpiredProviderToken reach the coordinator; none signed"
    )
    func refusedTokensReachTheCoordinator() async throws {
        var options = HeraldTestStack.Options(fcmAccount: ProviderHarness.fcmAccount)
        options.bundleID = ProviderHarness.bundleID
        options.teamID = ProviderHarness.teamID
        options.keyID = ProviderHarness.keyID
        options.apns = nil
        options.fcm = nil
        try await HeraldTestStack.with(options) { stack in
            var configuration = try APNsClientConfiguration(url: stack.endpoints.apnsURL)
            configuration.caCertificatePath = stack.endpoints.caCertificatePath
            configuration.serverHostname = "localhost"
            configuration.retryBaseDelay = .milliseconds(5)
            configuration.retryMaximumDelay = .milliseconds(20)
            let stale = Mutex<[ProviderToken]>([])
            let tokens = ProviderTokenManager(
                signer: stack.signer,
                coordination: .shared(onStale: { token in stale.withLock { $0.append(token) } })
            )
            // Nothing adopted yet: a shared manager has no token to give, and makes none.
            #expect(throws: APNsClientError.self) { try tokens.current() }
            let token = try stack.signer.makeToken(issuedAt: Int64(Date().timeIntervalSince1970))
            #expect(tokens.adopt(token))
            var logger = Logger(label: "test.shared-token")
            logger.logLevel = .critical
            let client = try APNsClient(configuration: configuration, tokens: tokens, logger: logger)
            let group = ServiceGroup(services: [client], logger: logger)
            let running = Task { try await group.run() }

            let device = try #require(try stack.core.registerDevice(bundleID: ProviderHarness.bundleID).messagingToken)
            let harness = ProviderHarness.self
            let alert = {
                APNsNotification.alert(
                    to: device,
                    bundleID: harness.bundleID,
                    payload: ByteBuffer(string: #"{"aps":{"alert":"hello"}}"#),
                    expiration: nil
                )
            }
            try stack.core.inject(SandboxFault(status: 403, reason: .invalidProviderToken))
            #expect(!(await client.send(alert()).isDelivered))
            #expect(stale.withLock { $0 } == [token])

            try stack.core.inject(SandboxFault(status: 429, reason: .tooManyProviderTokenUpdates))
            #expect(await client.send(alert()).isDelivered)
            #expect(stale.withLock { $0 } == [token, token])

            // Refused to the last attempt: the push waits a minute, and says why in words.
            try stack.core.inject(
                SandboxFault(status: 429, reason: .tooManyProviderTokenUpdates, count: configuration.maximumAttempts)
            )
            let refused = await client.send(alert())
            guard case .retryLater(let reason, let after) = refused else {
                Issue.record("expected retry later, got \(refused)")
                return
            }
            #expect(after == APNsClient.tokenUpdateRetry)
            #expect(reason.hasPrefix("TooManyProviderTokenUpdates: APNs refused the provider token of key"))
            stale.withLock { $0.removeAll() }

            try stack.core.inject(SandboxFault(status: 403, reason: .expiredProviderToken))
            #expect(await client.send(alert()).isDelivered)
            #expect(stale.withLock { $0 } == [token])
            #expect(tokens.tokensMade == 0)
            #expect(try tokens.current() == token)

            await group.triggerGracefulShutdown()
            try await running.value
        }
    }
}
