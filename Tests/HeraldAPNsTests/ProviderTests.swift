import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldSandbox
import NIOCore
import Testing

@Suite(.timeLimit(.minutes(2))) struct ProviderTests {
    @Test func alertAndVoIPPushesAreDelivered() async throws {
        try await ProviderHarness.with { harness in
            let device = try harness.device()
            var events = try harness.core.connect(deviceID: device.deviceID).makeAsyncIterator()
            let alert = harness.alert(to: try #require(device.messagingToken))
            let voip = harness.voip(to: try #require(device.voipToken))
            #expect(await harness.client.send(alert).isDelivered)
            #expect(await harness.client.send(voip).isDelivered)

            var received: [SandboxNotification] = []
            while received.count < 2, let event = await events.next() {
                if case .notification(let notification) = event { received.append(notification) }
            }
            #expect(received.map(\.apnsID) == [alert.apnsID, voip.apnsID])
            #expect(
                received[0].pushType == .alert && received[0].priority == 5
                    && received[0].topic == ProviderHarness.bundleID
            )
            #expect(
                received[1].pushType == .voip && received[1].priority == 10
                    && received[1].topic == ProviderHarness.bundleID + ".voip"
            )
            #expect(received[0].payload == String(buffer: alert.payload))
        }
    }

    @Test(arguments: [APNsReason.tooManyRequests, .shutdown, .serviceUnavailable, .internalServerError])
    func aRetryableAnswerIsRetriedWithTheSameID(reason: APNsReason) async throws {
        try await ProviderHarness.with { harness in
            let token = try #require(try harness.device().messagingToken)
            try harness.core.inject(SandboxFault(reason: reason))
            let push = harness.alert(to: token)
            #expect(await harness.client.send(push).isDelivered)
            let records = harness.core.inspection(token: token)
            #expect(records.map(\.outcome) == ["injected", "accepted"])
            #expect(records.map(\.apnsID) == [push.apnsID, push.apnsID])
        }
    }

    @Test func retriesStopAtTheMaximumAndSayRetryLater() async throws {
        try await ProviderHarness.with(.init(client: { $0.maximumAttempts = 3 })) { harness in
            let token = try #require(try harness.device().messagingToken)
            try harness.core.inject(SandboxFault(reason: .serviceUnavailable, count: 10))
            #expect(await harness.client.send(harness.alert(to: token)) == .retryLater(reason: "ServiceUnavailable"))
            #expect(harness.core.inspection(token: token).count == 3)
        }
    }

    @Test func retriesNeverGoPastTheExpiration() async throws {
        try await ProviderHarness.with(
            .init(client: {
                $0.retryBaseDelay = .seconds(5)
                $0.retryMaximumDelay = .seconds(5)
            })
        ) {
            harness in
            let token = try #require(try harness.device().messagingToken)
            try harness.core.inject(SandboxFault(reason: .serviceUnavailable, count: 10))
            // Expires in one second; the first retry could wait up to five: it is not attempted
            // unless the random wait happens to fit, and no attempt happens after the expiration.
            let expiration = Int64(Date().timeIntervalSince1970) + 2
            let result = await harness.client.send(harness.alert(to: token, expiration: expiration))
            #expect(result == .expired || result == .retryLater(reason: "ServiceUnavailable"))
            // Allow for the time between the client's check and the sandbox's clock reading.
            let late = harness.core.inspection(token: token).filter { $0.receivedAt > expiration * 1000 + 250 }
            #expect(late.isEmpty)
            // An already expired push is not sent at all.
            let past = Int64(Date().timeIntervalSince1970) - 1
            let before = harness.core.inspection(token: token).count
            #expect(await harness.client.send(harness.alert(to: token, expiration: past)) == .expired)
            #expect(harness.core.inspection(token: token).count == before)
        }
    }

    @Test func deadTokensReachTheFeedbackHandlerWithApplesTimestamp() async throws {
        try await ProviderHarness.with { harness in
            let device = try harness.device()
            let token = try #require(device.messagingToken)
            try harness.core.uninstall(deviceID: device.deviceID)
            let result = await harness.client.send(harness.alert(to: token))
            guard case .tokenDead(let reason, let timestamp) = result else {
                Issue.record("expected tokenDead, got \(result)")
                return
            }
            #expect(reason == .unregistered)
            let stamp = try #require(timestamp)
            #expect(abs(stamp - Int64(Date().timeIntervalSince1970 * 1000)) < 60_000)
            let feedback = harness.feedback.all
            #expect(
                feedback == [
                    APNsTokenFeedback(
                        deviceToken: token,
                        topic: ProviderHarness.bundleID,
                        reason: .unregistered,
                        timestamp: stamp
                    )
                ]
            )

            // BadDeviceToken is not a dead token: APNs also answers it for a live token sent to
            // the other environment's host. The push fails; the feedback handler is not told.
            let unknown = String(repeating: "ab", count: 32)
            #expect(
                await harness.client.send(harness.alert(to: unknown)) == .failed(reason: .badDeviceToken, status: 400)
            )
            // The messaging token on the VoIP topic: a token that is dead for that topic.
            var wrongTopic = harness.voip(to: try #require(try harness.device().messagingToken))
            wrongTopic.apnsID = APNsUUID.random()
            #expect(
                await harness.client.send(wrongTopic) == .tokenDead(reason: .deviceTokenNotForTopic, timestamp: nil)
            )
            #expect(harness.feedback.all.count == 2)
        }
    }

    @Test func permanentFailuresAreNotRetried() async throws {
        try await ProviderHarness.with { harness in
            let token = try #require(try harness.device().messagingToken)
            try harness.core.inject(SandboxFault(reason: .badCollapseId))
            #expect(await harness.client.send(harness.alert(to: token)) == .failed(reason: .badCollapseId, status: 400))
            try harness.core.inject(SandboxFault(reason: .payloadTooLarge))
            #expect(
                await harness.client.send(harness.alert(to: token)) == .failed(reason: .payloadTooLarge, status: 413)
            )
            try harness.core.revoke(keyID: ProviderHarness.keyID)
            #expect(await harness.client.send(harness.alert(to: token)) == .failed(reason: .forbidden, status: 403))
            #expect(harness.core.inspection(token: token).count == 3)
        }
    }

    @Test func invalidNotificationsAreNeverSent() async throws {
        try await ProviderHarness.with { harness in
            let token = try #require(try harness.device().messagingToken)
            var tooLarge = harness.alert(to: token)
            tooLarge.payload = ByteBuffer(string: String(repeating: "x", count: 4097))
            var badCollapse = harness.alert(to: token)
            badCollapse.collapseID = String(repeating: "c", count: 65)
            var voipOnBundle = harness.voip(to: token)
            voipOnBundle.topic = ProviderHarness.bundleID
            var backgroundAt10 = harness.alert(to: token)
            backgroundAt10.pushType = .background
            backgroundAt10.priority = .immediate
            for push in [tooLarge, badCollapse, voipOnBundle, backgroundAt10, harness.alert(to: "abc")] {
                #expect(throws: APNsClientError.self) { try push.validate() }
                #expect(await harness.client.send(push) == .failed(reason: nil, status: 400))
            }
            #expect(harness.core.inspection().isEmpty)
        }
    }
}
