import Foundation
import HeraldCrypto
import HeraldFCMCore
import HeraldRelay
import HeraldRelayAPI
import HeraldSandbox
import HeraldStore
import Testing

/// A message's push options (docs/relay.md, "Push options"), through the real sandbox.
@Suite("Push options", .timeLimit(.minutes(2)))
struct PushOptionsTests {
    static func message(to user: String, text: String = "Your refund was approved", options: [String: Any]) -> String {
        let body: [String: Any] = [
            "to": user, "from": ["id": "agent-7", "name": "Dana Agent"], "conversation": "c-1", "text": text,
        ].merging(options) { a, _ in a }
        return String(decoding: try! JSONSerialization.data(withJSONObject: body), as: UTF8.self)
    }

    @Test("priority 10, now-or-never, badge, category and public data reach APNs; private content does not")
    func apnsOptions() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "alice")
            let body = Self.message(
                to: "alice",
                text: "Secret reply 42",
                options: [
                    "priority": 10, "expiration": 0, "badge": 3, "category": "chat.newagentmessage",
                    "public_data": ["deep_link": "app://chat/c-1", "queue": "billing"],
                ]
            )
            let reply = try await harness.call(.POST, "/v1/messages", body: body)
            #expect(reply.status == 202, "\(reply.text)")
            let receipt = try reply.decode(IngestReceipt.self)
            let pushID = try #require(receipt.pushes.first?.pushID)
            try await harness.push(pushID, reaches: .delivered)

            let record = try #require(harness.accepted(token: phone.messagingToken).first)
            #expect(record.priority == "10")
            #expect(record.pushType == "alert")
            // Now or never: APNs is told 0 (deliver at once or drop), never the app's message_ttl.
            #expect(record.expiration == "0")
            #expect(record.payload.utf8.count <= 4096)
            #expect(!record.payload.contains("Secret") && !record.payload.contains("Dana"))
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(record.payload.utf8)) as? [String: Any]
            )
            let aps = try #require(object["aps"] as? [String: Any])
            #expect(aps["badge"] as? Int == 3)
            #expect(aps["category"] as? String == "chat.newagentmessage")
            #expect(aps["mutable-content"] as? Int == 1)
            #expect(object["deep_link"] as? String == "app://chat/c-1")
            #expect(object["queue"] as? String == "billing")
            let herald = try #require(object["herald"] as? [String: Any])
            #expect(herald["sealed"] is String)
        }
    }

    @Test("a per-message title and data are sealed: absent from the clear payload, inside the envelope")
    func sealedTitleAndData() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "frank")
            let body = Self.message(
                to: "frank",
                options: ["title": "Refund update", "data": ["order_ref": "ORD-77"], "public_data": ["screen": "chat"]]
            )
            let reply = try await harness.call(.POST, "/v1/messages", body: body)
            #expect(reply.status == 202, "\(reply.text)")
            let receipt = try reply.decode(IngestReceipt.self)
            try await harness.push(try #require(receipt.pushes.first?.pushID), reaches: .delivered)
            let record = try #require(harness.accepted(token: phone.messagingToken).first)
            #expect(!record.payload.contains("Refund update") && !record.payload.contains("ORD-77"))
            #expect(!record.payload.contains("order_ref"))
            #expect(record.payload.contains("\"screen\":\"chat\""))
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(record.payload.utf8)) as? [String: Any]
            )
            let alert = try #require((object["aps"] as? [String: Any])?["alert"] as? [String: Any])
            #expect(alert["title"] as? String == "New message")
            let sealed = try #require((object["herald"] as? [String: Any])?["sealed"] as? String)
            let opener = EnvelopeOpener(sessionKeys: [try phone.sessionKeys()])
            let context = EnvelopeContext(kind: .message, pushID: receipt.id, deviceID: phone.deviceID)
            guard case .message(let content) = try opener.openContent(try Envelope(text: sealed), context: context)
            else {
                Issue.record("the envelope did not hold a message")
                return
            }
            #expect(content.title == "Refund update")
            #expect(content.data == ["order_ref": "ORD-77"])
        }
    }

    @Test(
        "presence policy: per device pushes the user's other devices; per user keeps the push from all of them",
        arguments: [false, true]
    )
    func presencePolicy(perUser: Bool) async throws {
        try await RelayHarness.with { harness in
            if perUser {
                let put = try await harness.call(
                    .PUT,
                    "/v1/apps/\(RelayHarness.bundleID)",
                    body: #"{"team_id":"\#(RelayHarness.teamID)","presence_policy":"per_user"}"#
                )
                #expect(put.status == 200 && put.json["presence_policy"] as? String == "per_user", "\(put.text)")
            }
            let tablet = try await harness.phone(user: "gina")
            let phone = try await harness.phone(user: "gina")
            let beat = try await harness.call(
                .PUT,
                "/v1/devices/\(tablet.deviceID)/presence",
                auth: .bearer(tablet.credential),
                body: #"{"conversation":"c-1","state":"active","ttl":600}"#
            )
            #expect(beat.status == 200)
            let receipt = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "gina", options: [:]))
                .decode(IngestReceipt.self)
            let skipped = Dictionary(uniqueKeysWithValues: receipt.skipped.map { ($0.deviceID, $0.reason) })
            #expect(skipped[tablet.deviceID] == "active_in_conversation")
            if perUser {
                #expect(receipt.pushes.isEmpty)
                #expect(skipped[phone.deviceID] == "user_active_in_conversation")
            } else {
                #expect(receipt.pushes.map(\.deviceID) == [phone.deviceID])
            }
            // Another conversation is not suppressed either way.
            let other = try await harness.call(
                .POST,
                "/v1/messages",
                body: #"{"to":"gina","from":{"id":"a","name":"A"},"conversation":"c-2","text":"hi"}"#
            ).decode(IngestReceipt.self)
            #expect(other.pushes.count == 2)
        }
    }

    @Test("an app of the configuration file names its presence policy; per_device when left out")
    func presencePolicyInTheFile() throws {
        let decode = { (json: String) throws -> AppRecord in
            try JSONDecoder().decode(AppRecord.self, from: Data(json.utf8))
        }
        #expect(try decode(#"{"id":"a.b","team_id":"T","presence_policy":"per_user"}"#).presencePolicy == .perUser)
        #expect(try decode(#"{"id":"a.b","team_id":"T"}"#).presencePolicy == .perDevice)
        #expect(throws: DecodingError.self) { try decode(#"{"id":"a.b","team_id":"T","presence_policy":"x"}"#) }
    }

    @Test("an app's message_priority is the default; a request's priority overrides it")
    func appDefaultPriority() async throws {
        try await RelayHarness.with { harness in
            let put = try await harness.call(
                .PUT,
                "/v1/apps/\(RelayHarness.bundleID)",
                body: #"{"team_id":"\#(RelayHarness.teamID)","message_priority":10}"#
            )
            #expect(put.status == 200 && put.json["message_priority"] as? Int == 10, "\(put.text)")
            let bad = try await harness.call(
                .PUT,
                "/v1/apps/\(RelayHarness.bundleID)",
                body: #"{"team_id":"\#(RelayHarness.teamID)","message_priority":1}"#
            )
            #expect(bad.status == 400 && bad.json["field"] as? String == "message_priority", "\(bad.text)")
            let phone = try await harness.phone(user: "hana")
            for priority in [nil, 5] as [Int?] {
                let body = Self.message(to: "hana", options: priority.map { ["priority": $0] } ?? [:])
                let receipt = try await harness.call(.POST, "/v1/messages", body: body).decode(IngestReceipt.self)
                try await harness.push(try #require(receipt.pushes.first?.pushID), reaches: .delivered)
            }
            #expect(harness.accepted(token: phone.messagingToken).map(\.priority) == ["10", "5"])
        }
    }

    @Test("without options a message keeps priority 5 and the app's message_ttl")
    func defaults() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "bob")
            let before = Int64(Date().timeIntervalSince1970)
            let reply = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "bob", options: [:]))
            let receipt = try reply.decode(IngestReceipt.self)
            try await harness.push(try #require(receipt.pushes.first?.pushID), reaches: .delivered)
            let record = try #require(harness.accepted(token: phone.messagingToken).first)
            #expect(record.priority == "5")
            let expiration = try #require(record.expiration.flatMap { Int64($0) })
            #expect(expiration > before + 60)
            #expect(!record.payload.contains("\"badge\"") && !record.payload.contains("\"category\""))
        }
    }

    @Test("an expiration in seconds bounds the APNs header and FCM's ttl; badge, category and data reach FCM")
    func expirationAndFCM() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "carol")
            let android = try await harness.androidPhone(user: "carol")
            let before = Int64(Date().timeIntervalSince1970)
            let body = Self.message(
                to: "carol",
                options: ["expiration": 120, "badge": 0, "category": "chat.newagentmessage", "public_data": ["k": "v"]]
            )
            let reply = try await harness.call(.POST, "/v1/messages", body: body)
            let receipt = try reply.decode(IngestReceipt.self)
            #expect(receipt.pushes.count == 2)
            for push in receipt.pushes { try await harness.push(push.pushID, reaches: .delivered) }

            let apns = try #require(harness.accepted(token: phone.messagingToken).first)
            let expiration = try #require(apns.expiration.flatMap { Int64($0) })
            #expect(expiration >= before + 119 && expiration <= before + 121)

            let fcm = try #require(harness.acceptedFCM(token: android.messagingToken).first)
            let ttl = try #require(fcm.ttl.flatMap(FCMMessage.seconds(ttl:)))
            #expect(ttl > 100 && ttl <= 120)
            let data = try #require(fcm.data)
            #expect(data["badge"] == "0")
            #expect(data["category"] == "chat.newagentmessage")
            #expect(data["k"] == "v")
            #expect(data["sealed"] != nil)
        }
    }

    @Test(
        "bad options are refused with a 400 naming the field",
        arguments: [
            (#""priority":1"#, "priority"), (#""priority":7"#, "priority"), (#""expiration":-5"#, "expiration"),
            (#""expiration":99999999"#, "expiration"), (#""badge":-1"#, "badge"), ("\"category\":\"\"", "category"),
            (#""public_data":{"aps":"x"}"#, "public_data"), (#""public_data":{"herald":"x"}"#, "public_data"),
            (#""public_data":{"sealed":"x"}"#, "public_data"), (#""public_data":{"google.x":"x"}"#, "public_data"),
            ("\"title\":\"\"", "title"), (#""data":{"":"x"}"#, "data"),
            (#""data":{"big":"\#(String(repeating: "x", count: 4000))"}"#, "data"),
            (#""public_data":{"big":"\#(String(repeating: "x", count: 4000))"}"#, "public_data"),
        ]
    )
    func refusals(option: String, field: String) async throws {
        try await RelayHarness.with { harness in
            _ = try await harness.phone(user: "dave")
            let body = #"{"to":"dave","from":{"id":"a","name":"A"},"conversation":"c","text":"hi","# + option + "}"
            let reply = try await harness.call(.POST, "/v1/messages", body: body)
            #expect(reply.status == 400, "\(option) → \(reply.text)")
            #expect(reply.json["error"] as? String == "invalid_field")
            #expect(reply.json["field"] as? String == field, "\(reply.text)")
        }
    }

    @Test("public data is counted exactly: at the limit the body is 4096 bytes, one byte more is refused")
    func budgetAtTheLimit() throws {
        let app = AppRecord(id: "com.example.chat", teamID: "T", contentPolicy: .full)
        let sealer = EnvelopeSealer(
            sessionKeys: try KeyExchange.relaySessionKeys(
                relay: KeyPair.generate(),
                device: KeyPair.generate().publicKey
            )
        )
        let content = MessageContent(
            messageID: "m-1",
            conversationID: "c-1",
            senderID: "agent-7",
            senderName: "Dana",
            text: "",
            sentAt: 1
        )
        func body(_ length: Int) throws(HeraldCryptoError) -> String {
            let options = MessagePushOptions(publicData: ["d": String(repeating: "x", count: length)])
            return try PushPayload.message(
                content,
                app: app,
                for: PushTarget(deviceID: "dev-1", pushID: "push-1"),
                sealer: sealer,
                options: options
            ).body
        }
        // The largest value that still fits with an empty text.
        var low = 0
        var high = 4096
        while low < high {
            let middle = (low + high + 1) / 2
            if (try? body(middle)) != nil { low = middle } else { high = middle - 1 }
        }
        let fitting = try body(low)
        #expect(fitting.utf8.count <= 4096 && fitting.utf8.count > 4090)
        #expect(throws: HeraldCryptoError.doesNotFit) { try body(low + 1) }

        // With text, the public data leaves less room and the text is cut, never the data.
        var long = content
        long.text = String(repeating: "é", count: 3000)
        let options = MessagePushOptions(publicData: ["d": String(repeating: "x", count: 1000)])
        let cut = try PushPayload.message(
            long,
            app: app,
            for: PushTarget(deviceID: "dev-1", pushID: "push-1"),
            sealer: sealer,
            options: options
        )
        #expect(cut.truncated)
        #expect(cut.body.utf8.count <= 4096 && cut.body.utf8.count > 4090)
    }
}
