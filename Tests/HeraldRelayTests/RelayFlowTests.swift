import Foundation
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldSandbox
import HeraldStore
import Testing

/// Activation → message / call → what the sandbox received, over real HTTP, SQLite and HTTP/2.
@Suite("Relay flows", .timeLimit(.minutes(2)))
struct RelayFlowTests {
    static func message(to user: String, conversation: String = "c-1", text: String, key: String? = nil) -> String {
        let body: [String: Any] = [
            "to": user, "from": ["id": "agent-7", "name": "Dana Agent"], "conversation": conversation, "text": text,
        ].merging(key.map { ["idempotency_key": $0] } ?? [:]) { a, _ in a }
        return String(decoding: try! JSONSerialization.data(withJSONObject: body), as: UTF8.self)
    }

    /// The `herald` object of an APNs body.
    static func heraldField(_ payload: String) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any]
        return try #require(object?["herald"] as? [String: Any])
    }

    @Test("a message becomes a priority-5 alert with generic text and content only the device opens")
    func messageBecomesSealedAlert() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "alice")
            let secret = "Your refund of 42 EUR was approved"
            let reply = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "alice", text: secret))
            #expect(reply.status == 202)
            let receipt = try reply.decode(IngestReceipt.self)
            #expect(receipt.pushes.count == 1 && receipt.skipped.isEmpty && !receipt.duplicate)
            let pushID = try #require(receipt.pushes.first?.pushID)
            let status = try await harness.push(pushID, reaches: .delivered)
            #expect(status.history.map(\.state) == [.queued, .delivered])

            let record = try #require(harness.accepted(token: phone.messagingToken).first)
            #expect(record.priority == "5")
            #expect(record.pushType == "alert")
            #expect(record.topic == RelayHarness.bundleID)
            #expect(record.apnsID == pushID)
            #expect(!record.payload.contains(secret))
            #expect(!record.payload.contains("Dana"))
            #expect(!record.payload.contains("refund"))
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(record.payload.utf8)) as? [String: Any]
            )
            let aps = try #require(object["aps"] as? [String: Any])
            let alert = try #require(aps["alert"] as? [String: Any])
            #expect(alert["title"] as? String == "New message")
            #expect(alert["body"] as? String == "You have a new message")
            #expect(aps["mutable-content"] as? Int == 1)
            #expect(aps["thread-id"] as? String == "c-1")

            let herald = try Self.heraldField(record.payload)
            let sealed = try #require(herald["sealed"] as? String)
            let envelope = try Envelope(text: sealed)
            #expect(envelope.keyID.hex == phone.activation.keyID)
            let opener = EnvelopeOpener(sessionKeys: [try phone.sessionKeys()])
            let context = EnvelopeContext(kind: .message, pushID: receipt.id, deviceID: phone.deviceID)
            guard case .message(let content) = try opener.openContent(envelope, context: context) else {
                Issue.record("the envelope did not hold a message")
                return
            }
            #expect(content.text == secret)
            #expect(content.senderName == "Dana Agent")
            #expect(content.messageID == receipt.id)
            #expect(!content.truncated)
            // The same envelope under another device's context does not open.
            let elsewhere = EnvelopeContext(kind: .message, pushID: receipt.id, deviceID: "another-device")
            #expect(throws: HeraldCryptoError.authenticationFailed) { try opener.open(envelope, context: elsewhere) }
        }
    }

    @Test("a call becomes a priority-10 VoIP push to <bundle>.voip with a short expiration")
    func callBecomesVoIP() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "bob")
            let before = Int64(Date().timeIntervalSince1970)
            let reply = try await harness.call(
                .POST,
                "/v1/calls",
                body: #"{"to":"bob","from":{"id":"agent-7","name":"Dana Agent"},"call_id":"call-42","media":"video"}"#
            )
            #expect(reply.status == 202)
            let receipt = try reply.decode(IngestReceipt.self)
            let pushID = try #require(receipt.pushes.first?.pushID)
            try await harness.push(pushID, reaches: .delivered)
            let record = try #require(harness.accepted(token: phone.voipToken).first)
            #expect(record.priority == "10")
            #expect(record.pushType == "voip")
            #expect(record.topic == RelayHarness.bundleID + ".voip")
            let expiration = try #require(record.expiration.flatMap { Int64($0) })
            #expect(expiration > before && expiration <= before + 31)
            #expect(!record.payload.contains("Dana"))
            let herald = try Self.heraldField(record.payload)
            #expect(herald["call_id"] as? String == "call-42")
            let envelope = try Envelope(text: try #require(herald["sealed"] as? String))
            let opener = EnvelopeOpener(sessionKeys: [try phone.sessionKeys()])
            let content = try opener.openContent(
                envelope,
                context: EnvelopeContext(kind: .call, pushID: "call-42", deviceID: phone.deviceID)
            )
            guard case .call(let call) = content else {
                Issue.record("the envelope did not hold a call")
                return
            }
            #expect(call.callerName == "Dana Agent" && call.media == .video && call.callID == "call-42")

            // The same call id rings nobody twice.
            let again = try await harness.call(
                .POST,
                "/v1/calls",
                body: #"{"to":"bob","from":{"id":"agent-7","name":"Dana Agent"},"call_id":"call-42"}"#
            )
            let repeated = try again.decode(IngestReceipt.self)
            #expect(repeated.duplicate && repeated.pushes == receipt.pushes)
        }
    }

    @Test("active presence in the conversation suppresses; another conversation or stale presence does not")
    func presenceSuppression() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "carol")
            let beat = try await harness.call(
                .PUT,
                "/v1/devices/\(phone.deviceID)/presence",
                auth: .bearer(phone.credential),
                body: #"{"conversation":"c-1","state":"active","ttl":30}"#
            )
            #expect(beat.status == 200)

            let suppressed = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "carol", text: "hi"))
                .decode(IngestReceipt.self)
            #expect(suppressed.pushes.isEmpty)
            #expect(suppressed.skipped == [.init(deviceID: phone.deviceID, reason: "active_in_conversation")])

            let other = try await harness.call(
                .POST,
                "/v1/messages",
                body: Self.message(to: "carol", conversation: "c-2", text: "elsewhere")
            ).decode(IngestReceipt.self)
            #expect(other.pushes.count == 1)

            // 31 seconds later the "active" heartbeat is stale: it counts as background.
            harness.clock.advance(by: .seconds(31))
            let stale = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "carol", text: "later"))
                .decode(IngestReceipt.self)
            #expect(stale.pushes.count == 1 && stale.skipped.isEmpty)

            // Background presence never suppresses.
            _ = try await harness.call(
                .PUT,
                "/v1/devices/\(phone.deviceID)/presence",
                auth: .bearer(phone.credential),
                body: #"{"conversation":"c-1","state":"background"}"#
            )
            let background = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "carol", text: "bg"))
                .decode(IngestReceipt.self)
            #expect(background.pushes.count == 1)
            for push in other.pushes + stale.pushes + background.pushes {
                try await harness.push(push.pushID, reaches: .delivered)
            }
        }
    }

    @Test("a message fans out to every device of the user that has a token")
    func multiDeviceFanOut() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "dave")
            let tablet = try await harness.phone(user: "dave")
            let tokenless = try await harness.phone(user: "dave", messaging: false, voip: false)
            _ = try await harness.phone(user: "someone-else")
            let receipt = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "dave", text: "fan"))
                .decode(IngestReceipt.self)
            #expect(Set(receipt.pushes.map(\.deviceID)) == [phone.deviceID, tablet.deviceID])
            #expect(receipt.skipped == [.init(deviceID: tokenless.deviceID, reason: "no_token")])
            for push in receipt.pushes { try await harness.push(push.pushID, reaches: .delivered) }
            #expect(harness.accepted(token: phone.messagingToken).count == 1)
            #expect(harness.accepted(token: tablet.messagingToken).count == 1)

            // Each device's push opens only with that device's keys.
            let record = try #require(harness.accepted(token: tablet.messagingToken).first)
            let envelope = try Envelope(text: try #require(try Self.heraldField(record.payload)["sealed"] as? String))
            let wrong = EnvelopeOpener(sessionKeys: [try phone.sessionKeys()])
            #expect(throws: HeraldCryptoError.unknownKeyID) {
                try wrong.open(envelope, context: .init(kind: .message, pushID: receipt.id, deviceID: tablet.deviceID))
            }
        }
    }

    @Test("the same idempotency key never makes a second push")
    func idempotency() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "erin")
            let body = Self.message(to: "erin", text: "once", key: "order-1001-shipped")
            let first = try await harness.call(.POST, "/v1/messages", body: body).decode(IngestReceipt.self)
            let second = try await harness.call(.POST, "/v1/messages", body: body)
            #expect(second.status == 202)
            let repeated = try second.decode(IngestReceipt.self)
            #expect(repeated.duplicate && repeated.id == first.id && repeated.pushes == first.pushes)
            try await harness.push(try #require(first.pushes.first).pushID, reaches: .delivered)
            #expect(try await harness.store.outboxCounts()[.delivered] == 1)
            #expect(harness.accepted(token: phone.messagingToken).count == 1)
        }
    }

    @Test("a dead token (app uninstalled) is cleared and later pushes to it are skipped with the reason")
    func deadTokenCleared() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "frank")
            try harness.core.uninstall(deviceID: phone.sandboxDevice.deviceID)
            let receipt = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "frank", text: "gone?"))
                .decode(IngestReceipt.self)
            let status = try await harness.push(try #require(receipt.pushes.first).pushID, reaches: .tokenDead)
            #expect(status.reason == "Unregistered")
            let device = try await harness.call(.GET, "/v1/devices/\(phone.deviceID)").decode(DeviceView.self)
            #expect(device.messagingToken == nil)
            #expect(device.tokenDeadReason == "Unregistered")
            let later = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "frank", text: "again"))
                .decode(IngestReceipt.self)
            #expect(later.pushes.isEmpty)
            #expect(later.skipped == [.init(deviceID: phone.deviceID, reason: "token_dead: Unregistered")])

            // A fresh token brings the device back.
            let fresh = try harness.core.registerDevice(bundleID: RelayHarness.bundleID)
            let update = try await harness.call(
                .PUT,
                "/v1/devices/\(phone.deviceID)/tokens",
                auth: .bearer(phone.credential),
                body: #"{"messaging_token":"\#(fresh.messagingToken ?? "")"}"#
            )
            #expect(update.status == 200)
            let back = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "frank", text: "back"))
                .decode(IngestReceipt.self)
            try await harness.push(try #require(back.pushes.first).pushID, reaches: .delivered)
        }
    }

    @Test("content policy none: only ids travel, and the device fetches the message by id")
    func contentFreeFetch() async throws {
        var setup = RelayHarness.Setup()
        setup.app.contentPolicy = .none
        try await RelayHarness.with(setup) { harness in
            let phone = try await harness.phone(user: "gina")
            let stranger = try await harness.phone(user: "hank")
            let receipt = try await harness.call(
                .POST,
                "/v1/messages",
                body: Self.message(to: "gina", text: "Your code is 123456")
            ).decode(IngestReceipt.self)
            try await harness.push(try #require(receipt.pushes.first).pushID, reaches: .delivered)
            let record = try #require(harness.accepted(token: phone.messagingToken).first)
            let herald = try Self.heraldField(record.payload)
            #expect(herald["sealed"] == nil)
            #expect(herald["policy"] as? String == "none")
            #expect(herald["message_id"] as? String == receipt.id)
            #expect(!record.payload.contains("123456"))

            let fetched = try await harness.call(.GET, "/v1/messages/\(receipt.id)", auth: .bearer(phone.credential))
            #expect(fetched.status == 200)
            let view = try fetched.decode(MessageView.self)
            #expect(view.text == "Your code is 123456" && view.from.name == "Dana Agent")
            let foreign = try await harness.call(.GET, "/v1/messages/\(receipt.id)", auth: .bearer(stranger.credential))
            #expect(foreign.status == 404)
            let withKey = try await harness.call(.GET, "/v1/messages/\(receipt.id)")
            #expect(withKey.status == 403)
        }
    }

    @Test("a text longer than the budget is cut in the push, whole by id")
    func longTextCut() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "ivy")
            let text = String(repeating: "Grüße 👋🏽 ", count: 600)
            let receipt = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "ivy", text: text))
                .decode(IngestReceipt.self)
            try await harness.push(try #require(receipt.pushes.first).pushID, reaches: .delivered)
            let record = try #require(harness.accepted(token: phone.messagingToken).first)
            #expect(record.payload.utf8.count <= 4096)
            let envelope = try Envelope(text: try #require(try Self.heraldField(record.payload)["sealed"] as? String))
            let content = try EnvelopeOpener(sessionKeys: [try phone.sessionKeys()])
                .openContent(envelope, context: .init(kind: .message, pushID: receipt.id, deviceID: phone.deviceID))
            guard case .message(let message) = content else {
                Issue.record("not a message")
                return
            }
            #expect(message.truncated && text.hasPrefix(message.text) && message.text.count < text.count)
            let whole = try await harness.call(.GET, "/v1/messages/\(receipt.id)", auth: .bearer(phone.credential))
                .decode(MessageView.self)
            #expect(whole.text == text)
        }
    }
}
