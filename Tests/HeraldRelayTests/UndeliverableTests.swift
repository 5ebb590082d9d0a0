import Foundation
import HeraldAdapters
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

/// A message to a user with no activated device yet: refused with `no_devices` (its key unused,
/// so the platform's retry after the activation is accepted) or held and pushed through the
/// sandbox when the user's first device activates.
@Suite("A message to nobody", .timeLimit(.minutes(2)))
struct UndeliverableTests {
    static func setup(
        _ policy: Undeliverable,
        holdFor: Duration = UndeliverableConfiguration.defaultHoldFor
    )
        -> RelayHarness.Setup
    {
        var setup = AdapterTests.setup()
        setup.relay.undeliverable = UndeliverableConfiguration(policy: policy, holdFor: holdFor)
        return setup
    }

    @Test("refused: 409 no_devices naming the user, the key unused; the retry after the activation is pushed")
    func refusedThenRetried() async throws {
        try await RelayHarness.with(Self.setup(.refuse)) { harness in
            let body = RelayFlowTests.message(to: "alice", text: "Your order shipped", key: "K")
            let refused = try await harness.call(.POST, "/v1/messages", body: body)
            #expect(refused.status == 409, "\(refused.text)")
            #expect(refused.json["error"] as? String == "no_devices")
            #expect(refused.json["user"] as? String == "alice")
            #expect(harness.metric(#"herald_relay_undeliverable_messages_total{outcome="refused"}"#) == 1)

            let phone = try await harness.phone(user: "alice")
            let retried = try await harness.call(.POST, "/v1/messages", body: body)
            #expect(retried.status == 202, "\(retried.text)")
            let receipt = try retried.decode(IngestReceipt.self)
            #expect(!receipt.duplicate && receipt.status == .accepted)
            let pushID = try #require(receipt.pushes.first?.pushID)
            try await harness.push(pushID, reaches: .delivered)
            #expect(harness.accepted(token: phone.messagingToken).count == 1)
        }
    }

    @Test("held: 202 held, pushed through the sandbox when the first device activates, once")
    func heldThenReleased() async throws {
        try await RelayHarness.with(Self.setup(.hold, holdFor: .seconds(3600))) { harness in
            let secret = "Your refund was approved"
            let body = RelayFlowTests.message(to: "alice", text: secret, key: "K")
            let reply = try await harness.call(.POST, "/v1/messages", body: body)
            #expect(reply.status == 202, "\(reply.text)")
            let receipt = try reply.decode(IngestReceipt.self)
            #expect(receipt.status == .held && receipt.pushes.isEmpty)
            let heldUntil = try #require(receipt.heldUntil)
            #expect(heldUntil > harness.clock.now() + 3_590_000 && heldUntil <= harness.clock.now() + 3_600_000)
            // Sealed at rest, like every message.
            let stored = try #require(try await harness.store.message(id: receipt.id))
            #expect(!String(decoding: stored.sealedText, as: UTF8.self).contains("refund"))
            // The platform's retry before the activation: the same held message.
            let again = try await harness.call(.POST, "/v1/messages", body: body)
            #expect(try again.decode(IngestReceipt.self).duplicate)
            #expect(try again.decode(IngestReceipt.self).status == .held)

            let phone = try await harness.phone(user: "alice")
            try await eventually("the held message to reach the sandbox") {
                !harness.accepted(token: phone.messagingToken).isEmpty
            }
            let record = try #require(harness.accepted(token: phone.messagingToken).first)
            #expect(!record.payload.contains(secret))
            let herald = try RelayFlowTests.heraldField(record.payload)
            let message = try phone.openMessage(herald, pushID: receipt.id)
            #expect(message.text == secret)
            #expect(message.messageID == receipt.id)

            // A second device of the user: the message was released once, to the first.
            let second = try await harness.phone(user: "alice")
            #expect(harness.metric(#"herald_relay_undeliverable_messages_total{outcome="held"}"#) == 1)
            #expect(harness.metric(#"herald_relay_undeliverable_messages_total{outcome="released"}"#) == 1)
            #expect(harness.accepted(token: second.messagingToken).isEmpty)
            #expect(try await harness.store.heldMessages(userID: "alice", now: harness.clock.now()).isEmpty)
        }
    }

    @Test("a hold ends: purged as expired, and a device that activates after it gets nothing")
    func holdExpires() async throws {
        try await RelayHarness.with(Self.setup(.hold, holdFor: .seconds(60))) { harness in
            let reply = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "bob", text: "hi")
            )
            #expect(try reply.decode(IngestReceipt.self).status == .held)
            harness.clock.advance(by: .seconds(61))
            _ = try await harness.relay.ingest.purgeExpired()
            #expect(harness.metric(#"herald_relay_undeliverable_messages_total{outcome="expired"}"#) == 1)
            _ = try await harness.phone(user: "bob")
            #expect(harness.metric(#"herald_relay_undeliverable_messages_total{outcome="released"}"#) == 0)
        }
    }

    @Test("an app that refuses overrides the relay's default hold")
    func appRefuses() async throws {
        var setup = Self.setup(.hold)
        setup.app.undeliverable = .refuse
        try await RelayHarness.with(setup) { harness in
            let reply = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "carol", text: "x")
            )
            #expect(reply.status == 409, "\(reply.text)")
            let apps = try await harness.call(.GET, "/v1/apps")
            let listed = try #require((apps.json["apps"] as? [[String: Any]])?.first)
            #expect(listed["undeliverable"] as? String == "refuse", "\(apps.text)")
        }
    }

    @Test("adapters: the answer names the user the customer was mapped to, refused or held")
    func adaptersNameTheUser() async throws {
        let body = try AdapterTests.fixture("genesys/agent-text.json")
        for policy in [Undeliverable.refuse, .hold] {
            try await RelayHarness.with(Self.setup(policy)) { harness in
                let reply = try await harness.call(
                    .POST,
                    "/v1/adapters/genesys",
                    auth: .none,
                    body: body,
                    headers: AdapterTests.signed(body)
                )
                #expect(reply.json["user"] as? String == "sam", "\(reply.text)")
                switch policy {
                case .refuse:
                    #expect(reply.status == 409 && reply.json["error"] as? String == "no_devices")
                case .hold:
                    #expect(reply.status == 202 && reply.json["status"] as? String == "held")
                }
            }
        }
    }
}
