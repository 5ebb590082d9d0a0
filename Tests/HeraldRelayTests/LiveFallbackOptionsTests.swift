import Foundation
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldSandbox
import HeraldStore
import HeraldTestSupport
import Testing

/// A message delivered over a live channel and not acknowledged is pushed with the push options
/// its request named (docs/relay.md, "Push options"): the same priority, badge, category, public
/// data, sealed title and data, and an expiration counted from the message's acceptance, on
/// SQLite (one node) and on PostgreSQL (two nodes, the channel on the other one).
@Suite("Live fallback keeps the push options", .timeLimit(.minutes(2)))
struct LiveFallbackOptionsTests {
    static let expiration: Int64 = 3600

    static func request(to user: String, text: String) -> MessageRequest {
        var request = MessageRequest(
            to: user,
            from: Party(id: "agent-7", name: "Dana"),
            conversation: "c-1",
            text: text
        )
        request.options.priority = 10
        request.options.expiration = expiration
        request.options.badge = 4
        request.options.category = "chat.newagentmessage"
        request.options.publicData = ["deep_link": "app://chat/c-1"]
        request.options.title = "Refund update"
        request.options.data = ["order_ref": "ORD-77"]
        return request
    }

    /// Checks the fallback push the sandbox accepted: headers, clear options, and the sealed
    /// title and data inside the envelope.
    static func check(
        _ record: SandboxInspectionRecord,
        messageID: String,
        deviceID: String,
        acceptedAt: Int64,
        keys: SessionKeys
    ) throws {
        #expect(record.priority == "10")
        #expect(record.expiration == String(acceptedAt / 1000 + expiration), "counted from the acceptance")
        #expect(!record.payload.contains("Refund update") && !record.payload.contains("ORD-77"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(record.payload.utf8)) as? [String: Any])
        let aps = try #require(object["aps"] as? [String: Any])
        #expect(aps["badge"] as? Int == 4)
        #expect(aps["category"] as? String == "chat.newagentmessage")
        #expect(object["deep_link"] as? String == "app://chat/c-1")
        let herald = try #require(object["herald"] as? [String: Any])
        #expect(herald["message_id"] as? String == messageID)
        let sealed = try #require(herald["sealed"] as? String)
        let content = try EnvelopeOpener(sessionKeys: [keys])
            .openContent(
                try Envelope(text: sealed),
                context: EnvelopeContext(kind: .message, pushID: messageID, deviceID: deviceID)
            )
        guard case .message(let message) = content else {
            Issue.record("the envelope did not hold a message")
            return
        }
        #expect(message.title == "Refund update")
        #expect(message.data == ["order_ref": "ORD-77"])
    }

    @Test("SQLite: not acknowledged within the timeout, pushed with the message's options")
    func singleNode() async throws {
        try await RelayHarness.with { harness in
            harness.clock.freeze()
            let phone = try await harness.phone(user: "u1")
            let client = try await LiveChannelTests.activeChannel(harness, phone)
            defer { client.close() }
            let acceptedAt = harness.clock.now()
            let reply = try await harness.call(
                .POST,
                "/v1/messages",
                json: Self.request(to: "u1", text: "live then push")
            )
            let receipt = try reply.decode(IngestReceipt.self)
            #expect(receipt.skipped == [.init(deviceID: phone.deviceID, reason: "delivered_live")])
            var frames = client.received.makeAsyncIterator()
            #expect(try #require(await LiveClient.next(&frames))["message_id"] as? String == receipt.id)
            // The options are kept with the message, sealed: nothing of them in the clear.
            let stored = try #require(try await harness.store.message(id: receipt.id)?.sealedPushOptions)
            #expect(!String(decoding: stored, as: UTF8.self).contains("Refund"))

            try await eventually("the acknowledgement timer") { harness.clock.sleepers == 1 }
            harness.clock.advance(by: LiveChannelTests.ackTimeout)
            try await eventually("the fallback push") { !harness.accepted(token: phone.messagingToken).isEmpty }
            let records = harness.accepted(token: phone.messagingToken)
            #expect(records.count == 1)
            try Self.check(
                try #require(records.first),
                messageID: receipt.id,
                deviceID: phone.deviceID,
                acceptedAt: acceptedAt,
                keys: try phone.sessionKeys()
            )
        }
    }

    @Test("PostgreSQL, two nodes: ingested on B, the channel on A, not acknowledged: pushed with the options")
    func acrossNodes() async throws {
        try await TwoNodeCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            // A phone whose keys the test keeps, to open the envelope.
            let device = try cluster.stack.core.registerDevice(bundleID: RelayHarness.bundleID)
            let keys = KeyPair.generate()
            let activation = ActivationRequest(
                userID: "u1",
                app: RelayHarness.bundleID,
                platform: .ios,
                publicKey: keys.publicKey.base64,
                messagingToken: device.messagingToken,
                voipToken: device.voipToken
            )
            let activated = try await cluster.post("/v1/activations", body: activation, to: a)
            try #require(activated.status == 201)
            let answer = try JSONDecoder().decode(ActivationResponse.self, from: activated.body)
            let phone = TwoNodeCluster.Phone(sandboxDevice: device, activation: answer)
            let client = try await cluster.activeChannel(phone, on: a, seenBy: b)
            defer { client.close() }

            let acceptedAt = cluster.clock.now()
            let reply = try await cluster.post("/v1/messages", body: Self.request(to: "u1", text: "handed over"), to: b)
            let receipt = try JSONDecoder().decode(IngestReceipt.self, from: reply.body)
            try #require(receipt.skipped == [.init(deviceID: phone.deviceID, reason: "delivered_live")])
            var frames = client.received.makeAsyncIterator()
            #expect(try #require(await LiveClient.next(&frames))["message_id"] as? String == receipt.id)

            cluster.clock.advance(by: LiveClusterTests.ackTimeout)
            try await eventually("the fallback push") {
                !cluster.accepted(token: device.messagingToken).isEmpty
            }
            let records = cluster.accepted(token: device.messagingToken)
            #expect(records.count == 1)
            try Self.check(
                try #require(records.first),
                messageID: receipt.id,
                deviceID: phone.deviceID,
                acceptedAt: acceptedAt,
                keys: try KeyExchange.deviceSessionKeys(
                    device: keys,
                    relay: try PublicKey(base64: answer.relayPublicKey)
                )
            )
        }
    }
}
