import Foundation
import HeraldAdapters
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import Testing

/// Genesys Cloud and NICE CXone webhooks: realistic events in, the right pushes (or none) out.
@Suite("Contact-center adapters", .timeLimit(.minutes(2)))
struct AdapterTests {
    static let secret = "webhook-secret-0123456789"

    static func fixture(_ path: String) throws -> String {
        let url = URL(filePath: #filePath).deletingLastPathComponent().appending(path: "Fixtures/" + path)
        return try String(contentsOf: url, encoding: .utf8)
    }

    static func setup() -> RelayHarness.Setup {
        var setup = RelayHarness.Setup()
        setup.adapters = [
            GenesysAdapter(
                authentication: .hmacSHA256(secret),
                customers: CustomerMapping(users: ["guest-7c41e9": "sam"])
            ),
            CXoneAdapter(authentication: .sharedSecret(secret), customers: CustomerMapping(prefix: "cx-")),
        ]
        return setup
    }

    static func signed(_ body: String) -> [(String, String)] {
        [("x-herald-signature", WebhookAuthentication.signature(secret: secret, body: Array(body.utf8)))]
    }

    @Test(
        "Genesys: agent → customer Text and Structured (also via EventBridge) become pushes",
        arguments: ["genesys/agent-text.json", "genesys/agent-structured-eventbridge.json"]
    )
    func genesysPushes(fixture: String) async throws {
        try await RelayHarness.with(Self.setup()) { harness in
            let phone = try await harness.phone(user: "sam")
            let body = try Self.fixture(fixture)
            let reply = try await harness.call(
                .POST,
                "/v1/adapters/genesys",
                auth: .none,
                body: body,
                headers: Self.signed(body)
            )
            #expect(reply.status == 202, "\(reply.text)")
            let receipt = try reply.decode(IngestReceipt.self)
            let pushID = try #require(receipt.pushes.first?.pushID)
            try await harness.push(pushID, reaches: .delivered)
            let record = try #require(harness.accepted(token: phone.messagingToken).first)
            #expect(record.priority == "5" && record.pushType == "alert")
            #expect(!record.payload.contains("Dana") && !record.payload.contains("order"))
            let herald = try RelayFlowTests.heraldField(record.payload)
            #expect(herald["conversation_id"] as? String == "8f3c2a1e-5b7d-4c1a-9e2f-0a6b3c4d5e6f")
            let message = try phone.openMessage(herald, pushID: receipt.id)
            #expect(message.senderName == "Dana Okafor")
            #expect(message.senderID == "5f1e2d3c-agent-0001")

            // The platform retries a webhook: the same event never makes a second push.
            let again = try await harness.call(
                .POST,
                "/v1/adapters/genesys",
                auth: .none,
                body: body,
                headers: Self.signed(body)
            )
            #expect(try again.decode(IngestReceipt.self).duplicate)
        }
    }

    @Test(
        "Genesys: customer messages, bots, typing, transfers, receipts and other topics make no push",
        arguments: [
            ("genesys/customer-inbound.json", "inbound"),
            ("genesys/bot-message.json", "bot"),
            ("genesys/typing-event.json", "type Event"),
            ("genesys/agent-transfer.json", "type Event"),
            ("genesys/receipt.json", "type Receipt"),
            ("genesys/other-topic.json", "topic"),
        ]
    )
    func genesysIgnored(fixture: String, reason: String) async throws {
        try await RelayHarness.with(Self.setup()) { harness in
            _ = try await harness.phone(user: "sam")
            let ignored = #"herald_adapter_events_ignored_total{source="genesys"}"#
            #expect(harness.metric(ignored) == 0)
            let body = try Self.fixture(fixture)
            let reply = try await harness.call(
                .POST,
                "/v1/adapters/genesys",
                auth: .none,
                body: body,
                headers: Self.signed(body)
            )
            #expect(reply.status == 200, "\(reply.text)")
            #expect((reply.json["ignored"] as? String)?.contains(reason) == true, "\(reply.text)")
            #expect(try await harness.store.outboxCounts().byState.isEmpty)
            // Counted once, in this test's own registry.
            #expect(harness.metric(ignored) == 1)
        }
    }

    @Test("CXone: an agent's ChatMessageReceived becomes a push; others do not")
    func cxone() async throws {
        try await RelayHarness.with(Self.setup()) { harness in
            let phone = try await harness.phone(user: "cx-cust-44120")
            let bearer = RelayHarness.Auth.bearer(Self.secret)
            let message = try await harness.call(
                .POST,
                "/v1/adapters/cxone",
                auth: bearer,
                body: try Self.fixture("cxone/agent-message.json")
            )
            #expect(message.status == 202, "\(message.text)")
            let receipt = try message.decode(IngestReceipt.self)
            try await harness.push(try #require(receipt.pushes.first).pushID, reaches: .delivered)
            #expect(harness.accepted(token: phone.messagingToken).count == 1)
            for (fixture, reason) in [
                ("cxone/customer-message.json", "inbound"), ("cxone/bot-message.json", "no agent"),
                ("cxone/contact-ended.json", "CaseStatusChanged"),
            ] {
                let reply = try await harness.call(
                    .POST,
                    "/v1/adapters/cxone",
                    auth: bearer,
                    body: try Self.fixture(fixture)
                )
                #expect(
                    reply.status == 200 && (reply.json["ignored"] as? String)?.contains(reason) == true,
                    "\(reply.text)"
                )
            }
            #expect(harness.accepted(token: phone.messagingToken).count == 1)
        }
    }

    @Test("webhooks: a wrong or missing secret is 401; a malformed event is 400 naming the field, and writes nothing")
    func refusals() async throws {
        try await RelayHarness.with(Self.setup()) { harness in
            _ = try await harness.phone(user: "sam")
            let body = try Self.fixture("genesys/agent-text.json")
            let unsigned = try await harness.call(.POST, "/v1/adapters/genesys", auth: .none, body: body)
            #expect(unsigned.status == 401)
            let forged = try await harness.call(
                .POST,
                "/v1/adapters/genesys",
                auth: .none,
                body: body,
                headers: [("x-herald-signature", "sha256=" + String(repeating: "0", count: 64))]
            )
            #expect(forged.status == 401)
            // Signed for another body.
            let tampered = body.replacingOccurrences(of: "ships today", with: "ships never")
            let wrongBody = try await harness.call(
                .POST,
                "/v1/adapters/genesys",
                auth: .none,
                body: tampered,
                headers: Self.signed(body)
            )
            #expect(wrongBody.status == 401)
            let wrongBearer = try await harness.call(
                .POST,
                "/v1/adapters/cxone",
                auth: .bearer("not-the-secret-00000000"),
                body: try Self.fixture("cxone/agent-message.json")
            )
            #expect(wrongBearer.status == 401)

            let malformed = try Self.fixture("genesys/malformed-no-body.json")
            let noBody = try await harness.call(
                .POST,
                "/v1/adapters/genesys",
                auth: .none,
                body: malformed,
                headers: Self.signed(malformed)
            )
            #expect(noBody.status == 400 && noBody.json["field"] as? String == "eventBody", "\(noBody.text)")
            let noID = try await harness.call(
                .POST,
                "/v1/adapters/cxone",
                auth: .bearer(Self.secret),
                body: try Self.fixture("cxone/malformed-no-message-id.json")
            )
            #expect(noID.status == 400 && noID.json["field"] as? String == "contactEvent.messageId", "\(noID.text)")
            let garbage = "not json"
            let notJSON = try await harness.call(
                .POST,
                "/v1/adapters/genesys",
                auth: .none,
                body: garbage,
                headers: Self.signed(garbage)
            )
            #expect(notJSON.status == 400 && notJSON.json["field"] as? String == "body")
            #expect(try await harness.call(.POST, "/v1/adapters/zendesk", auth: .none, body: "{}").status == 404)
            #expect(try await harness.store.outboxCounts().byState.isEmpty)
        }
    }
}
