import Foundation
import HeraldFCMCore
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import Testing

/// Rules docs/relay.md states that no other test pins down: retention, presence, FCM's ttl cap
/// and the collapse id, each through the relay's HTTP API and the sandbox.
@Suite("Documented relay rules", .timeLimit(.minutes(2)))
struct DocumentedRulesTests {
    static func message(to user: String, conversation: String = "c-1", text: String, key: String? = nil) -> String {
        RelayFlowTests.message(to: user, conversation: conversation, text: text, key: key)
    }

    @Test("the janitor's purge: past retention a message and its push answer 404, its idempotency key is forgotten")
    func purgeAfterRetention() async throws {
        var setup = RelayHarness.Setup()
        setup.relay.messageRetention = .seconds(24 * 60 * 60)
        try await RelayHarness.with(setup) { harness in
            harness.clock.freeze()
            let phone = try await harness.phone(user: "u1")
            let body = Self.message(to: "u1", text: "kept for a day", key: "purge-1")
            let receipt = try await harness.call(.POST, "/v1/messages", body: body).decode(IngestReceipt.self)
            let pushID = try #require(receipt.pushes.first).pushID
            try await harness.push(pushID, reaches: .delivered)
            /// `GET /v1/pushes/{id}`'s and `GET /v1/messages/{id}`'s statuses.
            func statuses() async throws -> [Int] {
                let push = try await harness.call(.GET, "/v1/pushes/\(pushID)").status
                let message = try await harness.call(
                    .GET,
                    "/v1/messages/\(receipt.id)",
                    auth: .bearer(phone.credential)
                )
                .status
                return [push, message]
            }
            #expect(try await statuses() == [200, 200])

            // A minute before the retention ends: the janitor keeps both.
            harness.clock.advance(by: .seconds(24 * 60 * 60 - 60))
            let early = try await harness.relay.ingest.purgeExpired()
            #expect(early.messages == 0 && early.pushes == 0)
            #expect(try await statuses() == [200, 200])
            #expect(try await harness.call(.POST, "/v1/messages", body: body).decode(IngestReceipt.self).duplicate)

            // Past it: both gone, and the key makes a new message.
            harness.clock.advance(by: .seconds(120))
            let purged = try await harness.relay.ingest.purgeExpired()
            #expect(purged.messages == 1 && purged.pushes == 1)
            #expect(try await statuses() == [404, 404])
            let again = try await harness.call(.POST, "/v1/messages", body: body).decode(IngestReceipt.self)
            #expect(!again.duplicate && again.id != receipt.id)
        }
    }

    @Test("presence never suppresses calls: not a heartbeat's, not a live channel's")
    func presenceNeverSuppressesCalls() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "u1")
            let beat = try await harness.call(
                .PUT,
                "/v1/devices/\(phone.deviceID)/presence",
                auth: .bearer(phone.credential),
                body: #"{"conversation":"c-1","state":"active","ttl":600}"#
            )
            #expect(beat.status == 200)
            // The presence holds back a message (so it is in force) …
            let message = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "u1", text: "hi"))
                .decode(IngestReceipt.self)
            #expect(message.skipped == [.init(deviceID: phone.deviceID, reason: "active_in_conversation")])
            // … but a call rings.
            let call = try await harness.call(
                .POST,
                "/v1/calls",
                body: #"{"to":"u1","from":{"id":"agent-7","name":"Dana"},"call_id":"call-1"}"#
            ).decode(IngestReceipt.self)
            #expect(call.skipped.isEmpty)
            try await harness.push(try #require(call.pushes.first).pushID, reaches: .delivered)
            #expect(harness.accepted(token: phone.voipToken).count == 1)

            // The same with the app on screen, its live channel open.
            let client = try await LiveChannelTests.activeChannel(harness, phone)
            defer { client.close() }
            let live = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "u1", text: "live"))
                .decode(IngestReceipt.self)
            #expect(live.skipped == [.init(deviceID: phone.deviceID, reason: "delivered_live")])
            let second = try await harness.call(
                .POST,
                "/v1/calls",
                body: #"{"to":"u1","from":{"id":"agent-7","name":"Dana"},"call_id":"call-2"}"#
            ).decode(IngestReceipt.self)
            #expect(second.skipped.isEmpty)
            try await harness.push(try #require(second.pushes.first).pushID, reaches: .delivered)
            #expect(harness.accepted(token: phone.voipToken).count == 2)
        }
    }

    @Test("an active heartbeat suppresses message pushes until its ttl ends, to the millisecond, not after")
    func presenceTTLBoundary() async throws {
        try await RelayHarness.with { harness in
            harness.clock.freeze()
            let phone = try await harness.phone(user: "u1")
            let beat = try await harness.call(
                .PUT,
                "/v1/devices/\(phone.deviceID)/presence",
                auth: .bearer(phone.credential),
                body: #"{"conversation":"c-1","state":"active","ttl":60}"#
            )
            #expect(beat.status == 200)
            harness.clock.advance(by: .seconds(60) - .milliseconds(1))
            let before = try await harness.call(
                .POST,
                "/v1/messages",
                body: Self.message(to: "u1", text: "still here?")
            )
            .decode(IngestReceipt.self)
            #expect(before.pushes.isEmpty)
            #expect(before.skipped == [.init(deviceID: phone.deviceID, reason: "active_in_conversation")])
            harness.clock.advance(by: .milliseconds(1))
            let at = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "u1", text: "gone?"))
                .decode(IngestReceipt.self)
            #expect(at.skipped.isEmpty)
            try await harness.push(try #require(at.pushes.first).pushID, reaches: .delivered)
        }
    }

    @Test("an app's message_ttl over 28 days reaches FCM as android.ttl of at most 28 days; APNs keeps it whole")
    func fcmTTLCap() async throws {
        var setup = RelayHarness.Setup()
        setup.app.messageTTL = AppRecord.maximumMessageTTL
        try await RelayHarness.with(setup) { harness in
            let android = try await harness.androidPhone(user: "u1")
            let iphone = try await harness.phone(user: "u1")
            let receipt = try await harness.call(
                .POST,
                "/v1/messages",
                body: Self.message(to: "u1", text: "long lived")
            )
            .decode(IngestReceipt.self)
            #expect(receipt.pushes.count == 2)
            for push in receipt.pushes { try await harness.push(push.pushID, reaches: .delivered) }
            let record = try #require(harness.acceptedFCM(token: android.messagingToken).first)
            let ttl = try #require(record.ttl.flatMap(FCMMessage.seconds(ttl:)))
            // Capped, not shortened: 28 days less the seconds the push took.
            #expect((FCMMessage.maximumTTLSeconds - 60...FCMMessage.maximumTTLSeconds).contains(ttl))
            #expect(FCMMessage.maximumTTLSeconds == 2_419_200)
            let apns = try #require(harness.accepted(token: iphone.messagingToken).first)
            let expiration = try #require(apns.expiration.flatMap { Int64($0) })
            let now = harness.clock.now() / 1000
            #expect((now + AppRecord.maximumMessageTTL - 60...now + AppRecord.maximumMessageTTL).contains(expiration))
        }
    }

    @Test("collapse ids past APNs' 64 bytes are hashed: at most 64 bytes, stable per conversation, distinct across")
    func collapseIDHashing() async throws {
        var setup = RelayHarness.Setup()
        setup.app.collapseByConversation = true
        try await RelayHarness.with(setup) { harness in
            let phone = try await harness.phone(user: "u1")
            let prefix = "case-" + String(repeating: "x", count: 70)
            // Two ids alike in their first 64 bytes (a cut would merge them), one over 64 bytes
            // in only 40 characters, and one of exactly 64 bytes, kept as it is.
            let conversations = [
                prefix + "-1", prefix + "-1", prefix + "-2", String(repeating: "ü", count: 40),
                String(repeating: "k", count: 64),
            ]
            for (index, conversation) in conversations.enumerated() {
                let receipt = try await harness.call(
                    .POST,
                    "/v1/messages",
                    body: Self.message(to: "u1", conversation: conversation, text: "m\(index)")
                ).decode(IngestReceipt.self)
                try await harness.push(try #require(receipt.pushes.first).pushID, reaches: .delivered)
            }
            let ids = harness.accepted(token: phone.messagingToken).map { $0.collapseID ?? "" }
            try #require(ids.count == 5)
            #expect(ids.allSatisfy { (1...64).contains($0.utf8.count) }, "\(ids)")
            #expect(ids[0] == ids[1])
            #expect(ids[0] != ids[2])
            #expect(ids[0] != conversations[0] && ids[3] != conversations[3])
            #expect(ids[4] == conversations[4])
        }
    }
}
