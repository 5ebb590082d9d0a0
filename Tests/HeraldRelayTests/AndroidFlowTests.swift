import Foundation
import HeraldCrypto
import HeraldFCMCore
import HeraldRelay
import HeraldRelayAPI
import HeraldSandbox
import HeraldStore
import HeraldTestSupport
import Testing

/// Android devices: activation → message / call → the FCM data message the sandbox received.
@Suite("Relay flows on Android (FCM)", .timeLimit(.minutes(2)))
struct AndroidFlowTests {
    static func open(
        _ data: [String: String],
        kind: PushKind,
        pushID: String,
        phone: RelayHarness.Phone
    ) throws
        -> PushContent
    {
        let envelope = try Envelope(text: try #require(data["sealed"]))
        #expect(envelope.keyID.hex == phone.activation.keyID)
        let opener = EnvelopeOpener(sessionKeys: [try phone.sessionKeys()])
        return try opener.openContent(
            envelope,
            context: EnvelopeContext(kind: kind, pushID: pushID, deviceID: phone.deviceID)
        )
    }

    @Test("a message becomes a HIGH data message sealed for the device, beside the APNs alert of an iPhone")
    func messageBecomesDataMessage() async throws {
        try await RelayHarness.with { harness in
            let android = try await harness.androidPhone(user: "alice")
            let iphone = try await harness.phone(user: "alice")
            let secret = "Your refund of 42 EUR was approved"
            let reply = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "alice", text: secret)
            )
            #expect(reply.status == 202)
            let receipt = try reply.decode(IngestReceipt.self)
            #expect(receipt.pushes.count == 2 && receipt.skipped.isEmpty)
            for push in receipt.pushes { try await harness.push(push.pushID, reaches: .delivered) }

            let record = try #require(harness.acceptedFCM(token: android.messagingToken).first)
            #expect(record.priority == "HIGH")
            let ttl = try #require(record.ttl.flatMap(FCMMessage.seconds(ttl:)))
            #expect((86_390...86_400).contains(ttl))
            #expect(record.collapseKey == nil)
            let data = try #require(record.data)
            #expect(data["kind"] == "message" && data["v"] == "1" && data["policy"] == "full")
            #expect(data["message_id"] == receipt.id && data["conversation_id"] == "c-1")
            let visible = data.values.joined(separator: " ")
            #expect(!visible.contains("refund") && !visible.contains("Dana"))
            guard case .message(let content) = try Self.open(data, kind: .message, pushID: receipt.id, phone: android)
            else {
                Issue.record("the envelope did not hold a message")
                return
            }
            #expect(content.text == secret && content.senderName == "Dana Agent" && !content.truncated)
            // The iPhone got its APNs alert as before.
            #expect(harness.accepted(token: iphone.messagingToken).count == 1)
        }
    }

    @Test("a long text is cut to FCM's 4096 bytes of data, and the cut is flagged")
    func longTextFits() async throws {
        try await RelayHarness.with { harness in
            let android = try await harness.androidPhone(user: "carol")
            let receipt = try await harness.send(to: "carol", text: Self.longText)
            let data = try #require(harness.acceptedFCM(token: android.messagingToken).first?.data)
            let size = data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            #expect(size <= 4096 && size > 3900)
            Self.expectCut(try Self.openMessage(data, id: receipt.id, phone: android))
        }
    }

    @Test("a call rings Android with a HIGH data message that expires with the call")
    func callBecomesDataMessage() async throws {
        try await RelayHarness.with { harness in
            let android = try await harness.androidPhone(user: "bob")
            _ = try await harness.ring("bob", callID: "call-7")
            let record = try #require(harness.acceptedFCM(token: android.messagingToken).first)
            #expect(record.priority == "HIGH")
            let ttl = try #require(record.ttl.flatMap(FCMMessage.seconds(ttl:)))
            #expect((25...30).contains(ttl))
            let data = try #require(record.data)
            #expect(data["kind"] == "call" && data["call_id"] == "call-7")
            let call = try Self.openCall(data, id: "call-7", phone: android)
            #expect(call.callerName == "Dana Agent" && call.media == .video)
        }
    }

    @Test("UNREGISTERED clears the token: the next message skips the device with the reason")
    func unregisteredClearsToken() async throws {
        try await RelayHarness.with { harness in
            let android = try await harness.androidPhone(user: "dave")
            try await harness.expectTokenDropped(android, user: "dave", reason: "UNREGISTERED")
        }
    }

    @Test("collapse_by_conversation sets FCM's collapse_key and APNs' collapse id to the conversation")
    func collapseByConversation() async throws {
        var setup = RelayHarness.Setup()
        setup.app.collapseByConversation = true
        try await RelayHarness.with(setup) { harness in
            let android = try await harness.androidPhone(user: "erin")
            let iphone = try await harness.phone(user: "erin")
            let reply = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "erin", conversation: "case-981", text: "hello")
            )
            for push in try reply.decode(IngestReceipt.self).pushes {
                try await harness.push(push.pushID, reaches: .delivered)
            }
            #expect(harness.acceptedFCM(token: android.messagingToken).first?.collapseKey == "case-981")
            #expect(harness.accepted(token: iphone.messagingToken).first?.collapseID == "case-981")
        }
    }

    @Test("without an FCM sender configured, Android devices are skipped with a reason")
    func androidNotConfigured() async throws {
        var setup = RelayHarness.Setup()
        setup.relay.platforms = [.ios]
        try await RelayHarness.with(setup) { harness in
            _ = try await harness.androidPhone(user: "frank")
            let reply = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "frank", text: "hi")
            )
            let receipt = try reply.decode(IngestReceipt.self)
            #expect(receipt.pushes.isEmpty)
            #expect(receipt.skipped.first?.reason == "platform_not_configured")
        }
    }

    @Test("an Android device without its FCM token yet is skipped as no_token, for calls too")
    func androidWithoutToken() async throws {
        try await RelayHarness.with { harness in
            let keys = KeyPair.generate()
            let request = ActivationRequest(
                userID: "ivy",
                app: RelayHarness.bundleID,
                platform: .android,
                publicKey: keys.publicKey.base64
            )
            #expect(try await harness.call(.POST, "/v1/activations", json: request).status == 201)
            let call = try await harness.call(
                .POST,
                "/v1/calls",
                body: #"{"to":"ivy","from":{"id":"agent-7","name":"Dana Agent"},"call_id":"call-ivy"}"#
            )
            #expect(try call.decode(IngestReceipt.self).skipped.map(\.reason) == ["no_token"])
        }
    }

    @Test("through a remote herald provider, Android pushes are delivered the same way")
    func remoteProvider() async throws {
        var setup = RelayHarness.Setup()
        setup.remoteProvider = true
        try await RelayHarness.with(setup) { harness in
            let android = try await harness.androidPhone(user: "gina")
            let reply = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "gina", text: "hi")
            )
            let receipt = try reply.decode(IngestReceipt.self)
            try await harness.push(try #require(receipt.pushes.first?.pushID), reaches: .delivered)
            #expect(harness.acceptedFCM(token: android.messagingToken).count == 1)
        }
    }

    @Test("FCM's Retry-After holds a push back at least that long")
    func retryAfterIsHonoured() async throws {
        try await RelayHarness.with { harness in
            let android = try await harness.androidPhone(user: "hank")
            try harness.core.inject(fcmFault: SandboxFCMFault(errorCode: .quotaExceeded, retryAfter: 600, count: 1))
            let before = harness.clock.now()
            let reply = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "hank", text: "hi")
            )
            let pushID = try #require(try reply.decode(IngestReceipt.self).pushes.first?.pushID)
            try await eventually("the push to be retried") {
                try await harness.store.push(id: pushID)?.lastReason != nil
            }
            let next = try #require(try await harness.store.push(id: pushID)?.nextAttemptAt)
            #expect(next >= before + 600_000)
            #expect(harness.acceptedFCM(token: android.messagingToken).isEmpty)
        }
    }
}
