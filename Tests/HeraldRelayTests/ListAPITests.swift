import Foundation
import HeraldRelayAPI
import HeraldStore
import Testing

/// `GET /v1/users/{id}/devices` and `GET /v1/pushes` through the relay's HTTP API: what an
/// operator asks when a user did not get a push.
@Suite("List API", .timeLimit(.minutes(2)))
struct ListAPITests {
    static func message(to user: String, text: String = "Your order has shipped") -> String {
        #"{"to":"\#(user)","from":{"id":"agent-7","name":"Dana Secret"},"conversation":"order-1001","text":"\#(text)"}"#
    }

    @Test("a user's devices: app, platform, activation, whether each token is there, presence; never a token or key")
    func devicesOfAUser() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "alice")
            let tablet = try await harness.phone(user: "alice", voip: false)
            let android = try await harness.androidPhone(user: "alice")
            _ = try await harness.phone(user: "bob")
            let heartbeat = try await harness.call(
                .PUT,
                "/v1/devices/\(phone.deviceID)/presence",
                auth: .bearer(phone.credential),
                body: #"{"state":"active","conversation":"chat-9"}"#
            )
            try #require(heartbeat.status == 200)

            let reply = try await harness.call(.GET, "/v1/users/alice/devices")
            #expect(reply.status == 200)
            let view = try reply.decode(UserDevicesView.self)
            #expect(view.userID == "alice")
            #expect(view.devices.map(\.deviceID) == [phone.deviceID, tablet.deviceID, android.deviceID])
            let first = try #require(view.devices.first)
            #expect(first.app == RelayHarness.bundleID && first.platform == .ios)
            #expect(first.hasMessagingToken && first.hasVoIPToken && first.tokenDeadReason == nil)
            #expect(first.activatedAt > 0 && first.keyID == phone.activation.keyID)
            #expect(first.presence?.state == .active && first.presence?.conversation == "chat-9")
            #expect(view.devices[1].hasMessagingToken && !view.devices[1].hasVoIPToken)
            #expect(view.devices[1].presence == nil)
            #expect(view.devices[2].platform == .android && view.devices[2].hasMessagingToken)
            for secret in [
                phone.messagingToken, phone.voipToken, tablet.messagingToken, android.messagingToken,
                phone.credential, phone.activation.relayPublicKey, phone.keys.publicKey.base64,
            ] {
                #expect(!reply.text.contains(secret))
            }

            // A user the relay has no device for: an empty list, not an error.
            let nobody = try await harness.call(.GET, "/v1/users/nobody/devices")
            #expect(nobody.status == 200)
            #expect(try nobody.decode(UserDevicesView.self) == UserDevicesView(userID: "nobody", devices: []))

            // The app uninstalled: the dead token is gone and the device says why.
            try harness.core.uninstall(deviceID: phone.sandboxDevice.deviceID)
            let receipt = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "alice"))
                .decode(IngestReceipt.self)
            let push = try #require(receipt.pushes.first { $0.deviceID == phone.deviceID })
            try await harness.push(push.pushID, reaches: .tokenDead)
            let after = try await harness.call(.GET, "/v1/users/alice/devices").decode(UserDevicesView.self)
            let dead = try #require(after.devices.first { $0.deviceID == phone.deviceID })
            #expect(!dead.hasMessagingToken && dead.hasVoIPToken && dead.tokenDeadReason == "Unregistered")
        }
    }

    @Test("pushes filtered by user, device, state and time; each with its outcome, never its content")
    func pushesFiltered() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "alice")
            let android = try await harness.androidPhone(user: "alice")
            let bob = try await harness.phone(user: "bob")
            let first = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "alice"))
                .decode(IngestReceipt.self)
            let toBob = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "bob"))
                .decode(IngestReceipt.self)
            for push in first.pushes + toBob.pushes { try await harness.push(push.pushID, reaches: .delivered) }
            harness.clock.advance(by: .seconds(60))
            let since = harness.clock.now()
            try harness.core.uninstall(deviceID: phone.sandboxDevice.deviceID)
            let call = try await harness.call(
                .POST,
                "/v1/calls",
                body: #"{"to":"alice","from":{"id":"agent-7","name":"Dana Secret"},"call_id":"call-1"}"#
            ).decode(IngestReceipt.self)
            let iosCall = try #require(call.pushes.first { $0.deviceID == phone.deviceID })
            let androidCall = try #require(call.pushes.first { $0.deviceID == android.deviceID })
            try await harness.push(androidCall.pushID, reaches: .delivered)
            // The VoIP token is uninstalled with the app: PushKit's push comes back dead.
            try await harness.push(iosCall.pushID, reaches: .tokenDead)

            func list(_ query: String) async throws -> PushListView {
                let reply = try await harness.call(.GET, "/v1/pushes" + query)
                try #require(reply.status == 200, "\(query) answered \(reply.status): \(reply.text)")
                #expect(!reply.text.contains("Dana") && !reply.text.contains("shipped"))
                #expect(!reply.text.contains(phone.messagingToken) && !reply.text.contains(bob.messagingToken))
                return try reply.decode(PushListView.self)
            }
            let callIDs = [iosCall.pushID, androidCall.pushID]
            let alice = try await list("?user=alice")
            #expect(alice.next == nil)
            #expect(Set(alice.pushes.map(\.pushID)) == Set(first.pushes.map(\.pushID) + callIDs))
            #expect(Set(alice.pushes.prefix(2).map(\.pushID)) == Set(callIDs), "newest first")
            #expect(try await list("?user=bob").pushes.map(\.pushID) == toBob.pushes.map(\.pushID))
            #expect(try await list("").pushes.count == 5)
            let device = try await list("?device=\(android.deviceID)")
            #expect(Set(device.pushes.map(\.deviceID)) == [android.deviceID] && device.pushes.count == 2)
            let dead = try await list("?user=alice&state=token_dead")
            #expect(dead.pushes.map(\.pushID) == [iosCall.pushID])
            let item = try #require(dead.pushes.first)
            #expect(item.app == RelayHarness.bundleID && item.network == .apns && item.kind == .call)
            #expect(item.reason == "Unregistered" && item.attempts == 1 && item.apnsID == iosCall.pushID)
            #expect(item.finishedAt == item.updatedAt && item.lastAttemptAt == item.updatedAt)
            #expect(item.createdAt >= since && item.finishedAt! >= item.createdAt)
            let recent = try await list("?user=alice&since=\(since)")
            #expect(Set(recent.pushes.map(\.pushID)) == Set(callIDs))
            let date = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(since / 1000)))
            #expect(try await list("?since=\(date)").pushes.count == 2)
            let fcm = try #require(recent.pushes.first { $0.pushID == androidCall.pushID })
            #expect(fcm.network == .fcm && fcm.apnsID == nil && fcm.state == .delivered)
            #expect(try await list("?user=alice&state=queued").pushes.isEmpty)
            #expect(try await list("?user=nobody").pushes.isEmpty)
        }
    }

    @Test("pages follow 'next' without a gap or a repeat, and the last page has no 'next'")
    func pushesPaged() async throws {
        try await RelayHarness.with { harness in
            _ = try await harness.phone(user: "carol")
            var sent: [String] = []
            for index in 0..<7 {
                let receipt = try await harness.call(
                    .POST,
                    "/v1/messages",
                    body: Self.message(to: "carol", text: "message \(index)")
                ).decode(IngestReceipt.self)
                sent += receipt.pushes.map(\.pushID)
                // Each a millisecond apart: within one, the listing's order is by push id.
                harness.clock.advance(by: .milliseconds(1))
            }
            var listed: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                var query = "/v1/pushes?user=carol&limit=3"
                // A cursor is base64url: nothing in it needs escaping in a query.
                if let cursor { query += "&cursor=" + cursor }
                let page = try await harness.call(.GET, query).decode(PushListView.self)
                #expect(page.pushes.count <= 3)
                listed += page.pushes.map(\.pushID)
                cursor = page.next
                pages += 1
            } while cursor != nil && pages < 10
            #expect(pages == 3)
            #expect(listed.count == 7 && Set(listed) == Set(sent))
            // Newest first: the reverse of sending order.
            #expect(listed == sent.reversed())
        }
    }

    @Test("both lists need the API key: none or a wrong one is 401, a device credential 403")
    func authentication() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "alice")
            for path in ["/v1/users/alice/devices", "/v1/pushes", "/v1/pushes?user=alice"] {
                let none = try await harness.call(.GET, path, auth: .none)
                #expect(none.status == 401 && none.json["error"] as? String == "unauthorized", "\(path)")
                #expect(try await harness.call(.GET, path, auth: .bearer("wrong-key-0000000000")).status == 401)
                let device = try await harness.call(.GET, path, auth: .bearer(phone.credential))
                #expect(device.status == 403 && device.json["error"] as? String == "forbidden", "\(path)")
            }
        }
    }

    @Test(
        "a bad parameter is a 400 that names it",
        arguments: [
            ("/v1/pushes?state=in_flight", "state"),
            ("/v1/pushes?state=", "state"),
            ("/v1/pushes?since=yesterday", "since"),
            ("/v1/pushes?since=-5", "since"),
            ("/v1/pushes?limit=0", "limit"),
            ("/v1/pushes?limit=501", "limit"),
            ("/v1/pushes?limit=ten", "limit"),
            ("/v1/pushes?cursor=garbage", "cursor"),
            ("/v1/pushes?cursor=MTpub3RhbnVtYmVyOng", "cursor"),
            ("/v1/pushes?users=alice", "users"),
            ("/v1/pushes?user=alice&user=bob", "user"),
            ("/v1/pushes?user=", "user"),
            ("/v1/pushes?device=", "device"),
            ("/v1/users/alice/devices?limit=5", "limit"),
        ]
    )
    func badParameters(path: String, field: String) async throws {
        try await RelayHarness.with { harness in
            let reply = try await harness.call(.GET, path)
            #expect(reply.status == 400, "\(path): \(reply.text)")
            #expect(reply.json["error"] as? String == "invalid_field")
            #expect(reply.json["field"] as? String == field)
            #expect((reply.json["reason"] as? String)?.isEmpty == false)
        }
    }
}
