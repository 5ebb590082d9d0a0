import Foundation
import HeraldAPNsCore
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldSandbox
import HeraldStore
import HeraldTestSupport
import Testing

/// Authentication, malformed input, device life cycle, retries and expiry through the HTTP API.
@Suite("Relay API", .timeLimit(.minutes(2)))
struct RelayAPITests {
    static let message = #"{"to":"u1","from":{"id":"a","name":"A"},"conversation":"c","text":"hello"}"#

    @Test("backend endpoints: no credential is 401, a wrong key 401, a device credential 403")
    func backendAuthentication() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "u1")
            let none = try await harness.call(.POST, "/v1/messages", auth: .none, body: Self.message)
            #expect(none.status == 401)
            #expect(none.json["error"] as? String == "unauthorized")
            #expect(none.headers.contains { $0.0 == "www-authenticate" && $0.1 == "Bearer" })
            let wrong = try await harness.call(
                .POST,
                "/v1/messages",
                auth: .bearer("not-the-key-000000000"),
                body: Self.message
            )
            #expect(wrong.status == 401)
            let device = try await harness.call(
                .POST,
                "/v1/messages",
                auth: .bearer(phone.credential),
                body: Self.message
            )
            #expect(device.status == 403)
            #expect(device.json["error"] as? String == "forbidden")
            let status = try await harness.call(.GET, "/v1/pushes/whatever", auth: .bearer(phone.credential))
            #expect(status.status == 403)
            #expect(try await harness.store.outboxCounts().byState.isEmpty)
        }
    }

    @Test("during an API key rotation the previous key works too and each use is counted; others stay 401")
    func previousAPIKeyDuringRotation() async throws {
        var setup = RelayHarness.Setup()
        setup.servesMetrics = true
        setup.previousAPIKeys = ["hk_previous-key-0123456789"]
        try await RelayHarness.with(setup) { harness in
            let phone = try await harness.phone(user: "u1")
            let previous = RelayHarness.Auth.bearer("hk_previous-key-0123456789")
            #expect(try await harness.call(.POST, "/v1/messages", auth: previous, body: Self.message).status == 202)
            #expect(try await harness.call(.POST, "/v1/messages", auth: .apiKey, body: Self.message).status == 202)
            #expect(harness.metric("herald_api_key_previous_requests_total") == 1)
            let other = RelayHarness.Auth.bearer("hk_previous-key-0123456780")
            #expect(try await harness.call(.POST, "/v1/messages", auth: other, body: Self.message).status == 401)
            // Still a backend key: a device endpoint refuses it.
            let presence = "/v1/devices/\(phone.deviceID)/presence"
            let body = #"{"state":"active"}"#
            #expect(try await harness.call(.PUT, presence, auth: previous, body: body).status == 403)
            #expect(harness.metric("herald_api_key_previous_requests_total") == 1)
        }
    }

    @Test("hostile bodies: nothing is parsed before the credential, and the limits answer at once")
    func hostileBodies() async throws {
        try await RelayHarness.with { harness in
            let deep = String(repeating: "[", count: 60_000) + String(repeating: "]", count: 60_000)
            // No credential: refused before the body is read.
            let anonymous = try await harness.call(.POST, "/v1/activations", auth: .none, body: deep)
            #expect(anonymous.status == 401)
            let keys = (0..<15_000).map { #""k\#($0)":"v""# }.joined(separator: ",")
            let cases: [(path: String, body: String, field: String, reason: String)] = [
                ("/v1/activations", deep, "body", "deeper than 32 levels"),
                ("/v1/messages", deep, "body", "deeper than 32 levels"),
                ("/v1/messages", #"{"text":"# + deep + "}", "body", "deeper than 32 levels"),
                ("/v1/messages", #"{"public_data":{"# + keys + "}}", "body", "4096 values"),
                (
                    "/v1/messages", #"{"priority":"# + String(repeating: "7", count: 100_000) + "}", "priority",
                    "longer than 40"
                ),
                ("/v1/messages", #"{"to":"a","to":"b"}"#, "to", "given twice"),
                // 15,000 keys the request does not have: the first one ends the read.
                ("/v1/activations", "{" + keys + "}", "k0", "not a field of this request"),
                ("/v1/messages", "{" + keys + "}", "k0", "not a field of this request"),
            ]
            for (path, body, field, reason) in cases {
                let answer = try await harness.call(.POST, path, auth: .apiKey, body: body)
                #expect(answer.status == 400, "\(path)")
                #expect(answer.json["field"] as? String == field, "\(path)")
                #expect((answer.json["reason"] as? String ?? "").contains(reason), "\(path): \(answer.json)")
            }
            #expect(try await harness.store.outboxCounts().byState.isEmpty)
        }
    }

    @Test("device endpoints take only that device's credential")
    func deviceAuthentication() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "u1")
            let other = try await harness.phone(user: "u2")
            let path = "/v1/devices/\(phone.deviceID)/presence"
            let body = #"{"state":"active"}"#
            #expect(try await harness.call(.PUT, path, auth: .none, body: body).status == 401)
            #expect(try await harness.call(.PUT, path, auth: .bearer(other.credential), body: body).status == 403)
            #expect(try await harness.call(.PUT, path, auth: .apiKey, body: body).status == 403)
            // A credential with the right device id but a wrong secret.
            let forged = phone.deviceID + "." + String(repeating: "A", count: 43)
            #expect(try await harness.call(.PUT, path, auth: .bearer(forged), body: body).status == 401)
            #expect(try await harness.call(.PUT, path, auth: .bearer("garbage"), body: body).status == 401)
            #expect(try await harness.call(.PUT, path, auth: .bearer(phone.credential), body: body).status == 200)
            // Another device's tokens cannot be changed with this credential.
            let tokens = try await harness.call(
                .PUT,
                "/v1/devices/\(other.deviceID)/tokens",
                auth: .bearer(phone.credential),
                body: #"{"messaging_token":"abcdefabcdefabcdef"}"#
            )
            #expect(tokens.status == 403)
        }
    }

    @Test(
        "every malformed field gets a 400 that names it",
        arguments: [
            (#"{"to":"u1","from":{"id":"a","name":"A"},"conversation":"c"}"#, "text"),
            (#"{"to":"u1","from":{"id":"a","name":"A"},"conversation":"c","text":""}"#, "text"),
            (#"{"to":"","from":{"id":"a","name":"A"},"conversation":"c","text":"x"}"#, "to"),
            (#"{"to":"u1","from":{"id":"a"},"conversation":"c","text":"x"}"#, "from.name"),
            (#"{"to":"u1","from":"a","conversation":"c","text":"x"}"#, "from"),
            (#"{"to":"u1","from":{"id":"a","name":"A"},"conversation":7,"text":"x"}"#, "conversation"),
            (
                #"{"to":"u1","from":{"id":"a","name":"A"},"conversation":"c","text":"x","idempotency_key":""}"#,
                "idempotency_key"
            ),
            (#"{"to":"u1\u0000","from":{"id":"a","name":"A"},"conversation":"c","text":"x"}"#, "to"),
            (
                #"{"to":"u1","from":{"id":"a","name":"A"},"conversation":"c","text":"x","idempotency_ky":"k"}"#,
                "idempotency_ky"
            ),
            (#"{"to":"u1","from":{"id":"a","name":"A","nick":"B"},"conversation":"c","text":"x"}"#, "from.nick"),
            (#"{"to":"u1","from":{"id":"a","name":"A"},"#, "body"),
            (#"[1,2]"#, "body"),
            ("", "body"),
        ]
    )
    func malformedMessages(body: String, field: String) async throws {
        try await RelayHarness.with { harness in
            let reply = try await harness.call(.POST, "/v1/messages", body: body)
            #expect(reply.status == 400, "\(reply.text)")
            #expect(reply.json["error"] as? String == "invalid_field")
            #expect(reply.json["field"] as? String == field, "\(reply.text)")
            #expect(try await harness.store.outboxCounts().byState.isEmpty)
        }
    }

    @Test("activation refuses bad keys, unknown apps, bad tokens and media")
    func malformedActivations() async throws {
        try await RelayHarness.with { harness in
            let key = KeyPair.generate().publicKey.base64
            let cases: [(String, String)] = [
                (#"{"user_id":"u","app":"com.example.chat","platform":"ios","public_key":"AAAA"}"#, "public_key"),
                (#"{"user_id":"u","app":"com.example.other","platform":"ios","public_key":"\#(key)"}"#, "app"),
                (#"{"user_id":"u","app":"com.example.chat","platform":"symbian","public_key":"\#(key)"}"#, "platform"),
                (
                    #"{"user_id":"u","app":"com.example.chat","platform":"ios","public_key":"\#(key)","messaging_token":"xyz"}"#,
                    "messaging_token"
                ),
                (
                    #"{"user_id":"u","app":"com.example.chat","platform":"android","public_key":"\#(key)","voip_token":"abcdefabcdefabcdef"}"#,
                    "voip_token"
                ),
                (#"{"app":"com.example.chat","platform":"ios","public_key":"\#(key)"}"#, "user_id"),
            ]
            for (body, field) in cases {
                let reply = try await harness.call(.POST, "/v1/activations", body: body)
                #expect(reply.status == 400, "\(body) → \(reply.text)")
                #expect(reply.json["field"] as? String == field, "\(body) → \(reply.text)")
            }
            let call = try await harness.call(
                .POST,
                "/v1/calls",
                body: #"{"to":"u","from":{"id":"a","name":"A"},"call_id":"c1","media":"hologram"}"#
            )
            #expect(call.status == 400 && call.json["field"] as? String == "media")
            #expect(try await harness.store.deviceCount() == 0)
        }
    }

    @Test("a key given twice is refused with its name, never decoded to one of the two")
    func duplicateKeys() async throws {
        try await RelayHarness.with { harness in
            let cases: [(String, String, String)] = [
                (
                    "/v1/messages",
                    #"{"to":"alice","to":"mallory","from":{"id":"a","name":"A"},"conversation":"c","text":"t"}"#, "to"
                ),
                (
                    "/v1/messages",
                    #"{"to":"alice","from":{"id":"a","name":"A","name":"B"},"conversation":"c","text":"t"}"#,
                    "from.name"
                ),
                (
                    "/v1/calls", #"{"to":"alice","from":{"id":"a","name":"A"},"call_id":"c1","\u0063all_id":"c2"}"#,
                    "call_id"
                ),
            ]
            for (path, body, field) in cases {
                let reply = try await harness.call(.POST, path, body: body)
                #expect(reply.status == 400, "\(body) → \(reply.text)")
                #expect(reply.json["field"] as? String == field, "\(body) → \(reply.text)")
                #expect((reply.json["reason"] as? String ?? "").contains("given twice"), "\(reply.text)")
            }
            #expect(try await harness.store.outboxCounts().byState.isEmpty)
        }
    }

    @Test("a body over the size limit is 413, unknown ids are 404")
    func sizeAndNotFound() async throws {
        try await RelayHarness.with { harness in
            let huge =
                #"{"to":"u1","from":{"id":"a","name":"A"},"conversation":"c","text":""#
                + String(repeating: "x", count: 300 * 1024) + #""}"#
            let reply = try await harness.call(.POST, "/v1/messages", body: huge)
            #expect(reply.status == 413)
            #expect(reply.json["error"] as? String == "body_too_large")
            #expect(try await harness.call(.GET, "/v1/pushes/nope").status == 404)
            #expect(try await harness.call(.GET, "/v1/devices/nope").status == 404)
            #expect(try await harness.call(.DELETE, "/v1/devices/nope").status == 404)
        }
    }

    @Test("re-activation rotates keys: new key id, previous kept for pushes in flight, old credential dead")
    func reactivationRotatesKeys() async throws {
        var setup = RelayHarness.Setup()
        setup.client = { $0.maximumAttempts = 1 }
        try await RelayHarness.with(setup) { harness in
            let phone = try await harness.phone(user: "u1")
            // A push sealed before the rotation and still in flight across it: APNs refuses it
            // until after the rotation, so the relay keeps retrying it.
            try harness.core.inject(
                SandboxFault(status: 503, reason: .serviceUnavailable, count: 1000, token: phone.messagingToken)
            )
            let inFlight = try await harness.call(.POST, "/v1/messages", body: Self.message).decode(IngestReceipt.self)
            let inFlightID = try #require(inFlight.pushes.first).pushID
            try await eventually("a refused attempt") {
                let status = try await harness.relay.ingest.pushStatus(id: inFlightID)
                return status.attempts >= 1 && status.state == .queued
            }
            let newKeys = KeyPair.generate()
            let request = ActivationRequest(
                userID: "u1",
                app: RelayHarness.bundleID,
                platform: .ios,
                publicKey: newKeys.publicKey.base64,
                deviceID: phone.deviceID
            )
            let reply = try await harness.call(.POST, "/v1/activations", auth: .bearer(phone.credential), json: request)
            #expect(reply.status == 201, "\(reply.text)")
            let rotated = try reply.decode(ActivationResponse.self)
            #expect(rotated.deviceID == phone.deviceID)
            #expect(rotated.previousKeyID == phone.activation.keyID)
            #expect(rotated.keyID != phone.activation.keyID)
            #expect(rotated.deviceCredential != phone.credential)
            let stale = try await harness.call(.GET, "/v1/devices/\(phone.deviceID)", auth: .bearer(phone.credential))
            #expect(stale.status == 401)
            let rotatedSession = try KeyExchange.deviceSessionKeys(
                device: newKeys,
                relay: try PublicKey(base64: rotated.relayPublicKey)
            )
            // The push sealed before arrives after the rotation, under the previous key: the
            // device opens it because it kept that key, and could not with the new one alone.
            harness.core.clearFaults()
            try await harness.push(inFlightID, reaches: .delivered)
            let early = try #require(harness.accepted(token: phone.messagingToken).first)
            let earlyEnvelope = try Envelope(
                text: try #require(RelayFlowTests.heraldField(early.payload)["sealed"] as? String)
            )
            #expect(earlyEnvelope.keyID.hex == phone.activation.keyID)
            let earlyContext = EnvelopeContext(kind: .message, pushID: inFlight.id, deviceID: phone.deviceID)
            let opened = try EnvelopeOpener(sessionKeys: [rotatedSession, try phone.sessionKeys()])
                .openContent(earlyEnvelope, context: earlyContext)
            guard case .message(let earlyMessage) = opened else {
                Issue.record("not a message")
                return
            }
            #expect(earlyMessage.messageID == inFlight.id)
            #expect(throws: HeraldCryptoError.unknownKeyID) {
                try EnvelopeOpener(sessionKeys: [rotatedSession]).openContent(earlyEnvelope, context: earlyContext)
            }
            // Tokens survive the rotation; new pushes carry the new key id and open with the new keys.
            let receipt = try await harness.call(.POST, "/v1/messages", body: Self.message)
                .decode(IngestReceipt.self)
            try await harness.push(try #require(receipt.pushes.first).pushID, reaches: .delivered)
            let record = try #require(harness.accepted(token: phone.messagingToken).last)
            let herald = try RelayFlowTests.heraldField(record.payload)
            let envelope = try Envelope(text: try #require(herald["sealed"] as? String))
            #expect(envelope.keyID.hex == rotated.keyID)
            _ = try EnvelopeOpener(sessionKeys: [rotatedSession])
                .openContent(envelope, context: .init(kind: .message, pushID: receipt.id, deviceID: phone.deviceID))
            // Another user's credential cannot re-activate this device.
            let other = try await harness.phone(user: "u2")
            var hijack = request
            hijack.userID = "u2"
            let refused = try await harness.call(
                .POST,
                "/v1/activations",
                auth: .bearer(other.credential),
                json: hijack
            )
            #expect(refused.status == 403)
        }
    }

    @Test("a token moved to another device is taken from the old one; logout removes everything")
    func tokenMoveAndLogout() async throws {
        try await RelayHarness.with { harness in
            let old = try await harness.phone(user: "u1")
            let keys = KeyPair.generate()
            let moved = ActivationRequest(
                userID: "u2",
                app: RelayHarness.bundleID,
                platform: .ios,
                publicKey: keys.publicKey.base64,
                messagingToken: old.messagingToken
            )
            let reply = try await harness.call(.POST, "/v1/activations", json: moved)
            #expect(reply.status == 201)
            let oldView = try await harness.call(.GET, "/v1/devices/\(old.deviceID)").decode(DeviceView.self)
            #expect(oldView.messagingToken == nil)
            #expect(oldView.voipToken == old.voipToken)
            let u1 = try await harness.call(.POST, "/v1/messages", body: Self.message).decode(IngestReceipt.self)
            #expect(u1.pushes.isEmpty && u1.skipped.first?.reason == "no_token")

            let logout = try await harness.call(.DELETE, "/v1/devices/\(old.deviceID)", auth: .bearer(old.credential))
            #expect(logout.status == 204)
            #expect(try await harness.call(.GET, "/v1/devices/\(old.deviceID)").status == 404)
            #expect(
                try await harness.call(.GET, "/v1/devices/\(old.deviceID)", auth: .bearer(old.credential)).status == 401
            )
            let after = try await harness.call(.POST, "/v1/messages", body: Self.message).decode(IngestReceipt.self)
            #expect(after.pushes.isEmpty && after.skipped.isEmpty)
        }
    }

    @Test("late tokens: a device activated without tokens gets pushes once it sends them")
    func lateTokens() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "u1", messaging: false, voip: false)
            let call = #"{"to":"u1","from":{"id":"a","name":"A"},"call_id":"early"}"#
            let early = try await harness.call(.POST, "/v1/calls", body: call).decode(IngestReceipt.self)
            #expect(early.skipped.first?.reason == "no_voip_token")
            let update = try await harness.call(
                .PUT,
                "/v1/devices/\(phone.deviceID)/tokens",
                auth: .bearer(phone.credential),
                body: #"{"messaging_token":"\#(phone.messagingToken)","voip_token":"\#(phone.voipToken)"}"#
            )
            #expect(update.status == 200)
            let late = try await harness.call(
                .POST,
                "/v1/calls",
                body: #"{"to":"u1","from":{"id":"a","name":"A"},"call_id":"late"}"#
            ).decode(IngestReceipt.self)
            try await harness.push(try #require(late.pushes.first).pushID, reaches: .delivered)
            #expect(harness.accepted(token: phone.voipToken).count == 1)
        }
    }

    @Test("pushes the provider cannot deliver are retried until delivered")
    func retriedUntilDelivered() async throws {
        var setup = RelayHarness.Setup()
        setup.client = { $0.maximumAttempts = 1 }
        try await RelayHarness.with(setup) { harness in
            let phone = try await harness.phone(user: "u1")
            try harness.core.inject(
                SandboxFault(status: 503, reason: .serviceUnavailable, count: 3, token: phone.messagingToken)
            )
            let receipt = try await harness.call(.POST, "/v1/messages", body: Self.message).decode(IngestReceipt.self)
            let status = try await harness.push(try #require(receipt.pushes.first).pushID, reaches: .delivered)
            // The client's own attempts ran out at least once, so the relay queued the push again.
            #expect(status.attempts >= 2)
            #expect(status.history.filter { $0.state == .queued }.count == status.attempts)
            let records = harness.core.inspection(token: phone.messagingToken)
            #expect(records.filter { $0.status == 503 }.count == 3)
            #expect(records.filter { $0.status == 200 }.map(\.apnsID) == [status.apnsID])
        }
    }

    @Test("a call that cannot ring before its expiration never rings later")
    func callExpires() async throws {
        var setup = RelayHarness.Setup()
        setup.app.callTTL = 1
        setup.client = { $0.maximumAttempts = 1 }
        try await RelayHarness.with(setup) { harness in
            let phone = try await harness.phone(user: "u1")
            try harness.core.inject(
                SandboxFault(status: 503, reason: .serviceUnavailable, count: 1000, token: phone.voipToken)
            )
            let receipt = try await harness.call(
                .POST,
                "/v1/calls",
                body: #"{"to":"u1","from":{"id":"a","name":"A"},"call_id":"doomed"}"#
            ).decode(IngestReceipt.self)
            try await harness.push(try #require(receipt.pushes.first).pushID, reaches: .expired)
            #expect(harness.core.inspection(token: phone.voipToken).contains { $0.status == 503 })
            harness.core.clearFaults()
            #expect(harness.accepted(token: phone.voipToken).isEmpty)
        }
    }

    @Test("apps can be registered over the API; bad app settings name the field")
    func appsAPI() async throws {
        try await RelayHarness.with { harness in
            let put = try await harness.call(
                .PUT,
                "/v1/apps/com.example.second",
                body: #"{"team_id":"TEAM123456","content_policy":"sender_only","alert_title":"Acme","call_ttl":20}"#
            )
            #expect(put.status == 200, "\(put.text)")
            let list = try await harness.call(.GET, "/v1/apps")
            #expect(list.text.contains("com.example.second") && list.text.contains("sender_only"))
            let bad = try await harness.call(.PUT, "/v1/apps/com.example.third", body: #"{"team_id":"T","call_ttl":0}"#)
            #expect(bad.status == 400 && bad.json["field"] as? String == "call_ttl")
            let badPolicy = try await harness.call(
                .PUT,
                "/v1/apps/com.example.third",
                body: #"{"team_id":"T","content_policy":"everything"}"#
            )
            #expect(badPolicy.status == 400 && badPolicy.json["field"] as? String == "content_policy")
        }
    }

    @Test("health counts the outbox; metrics speak Prometheus and count what this relay did")
    func healthAndMetrics() async throws {
        var setup = RelayHarness.Setup()
        setup.servesMetrics = true
        try await RelayHarness.with(setup) { harness in
            _ = try await harness.phone(user: "u1")
            func scrape() async throws -> RelayHarness.Reply {
                let metrics = try await harness.call(.GET, "/metrics", auth: .none)
                #expect(metrics.status == 200)
                #expect(metrics.headers.contains { $0.0 == "content-type" && $0.1.hasPrefix("text/plain") })
                return metrics
            }
            let accepted = "herald_relay_messages_accepted_total"
            // Outcomes are counted per app and network too.
            let delivered =
                #"herald_relay_pushes_completed_total{state="delivered",app="com.example.chat",network="apns"}"#
            let before = try await scrape()
            #expect(TestMetrics.value(accepted, in: before.text) == 0)
            #expect(TestMetrics.value(delivered, in: before.text) == 0)

            let receipt = try await harness.call(.POST, "/v1/messages", body: Self.message).decode(IngestReceipt.self)
            try await harness.push(try #require(receipt.pushes.first).pushID, reaches: .delivered)
            let health = try await harness.call(.GET, "/health", auth: .none)
            #expect(health.status == 200)
            #expect(health.json["status"] as? String == "ok")
            #expect(health.json["outbox_delivered"] as? Int == 1)
            #expect(health.json["devices"] as? Int == 1)
            // The registry is this relay's alone: the one message and its one delivery, exactly.
            let after = try await scrape()
            #expect(TestMetrics.value(accepted, in: after.text) == 1)
            #expect(TestMetrics.value(delivered, in: after.text) == 1)
        }
    }

}

/// `herald relay` with a remote `herald provider`: the same flows over the provider's batch API.
@Suite("Relay with a remote provider", .timeLimit(.minutes(2)))
struct RemoteProviderTests {
    @Test("messages and calls reach the sandbox through the provider's HTTP batch API; dead tokens come back")
    func remoteProvider() async throws {
        var setup = RelayHarness.Setup()
        setup.remoteProvider = true
        try await RelayHarness.with(setup) { harness in
            let phone = try await harness.phone(user: "u1")
            let message = try await harness.call(.POST, "/v1/messages", body: RelayAPITests.message)
                .decode(IngestReceipt.self)
            let call = try await harness.call(
                .POST,
                "/v1/calls",
                body: #"{"to":"u1","from":{"id":"a","name":"A"},"call_id":"remote-call"}"#
            ).decode(IngestReceipt.self)
            try await harness.push(try #require(message.pushes.first).pushID, reaches: .delivered)
            try await harness.push(try #require(call.pushes.first).pushID, reaches: .delivered)
            #expect(harness.accepted(token: phone.messagingToken).map(\.apnsID) == message.pushes.map(\.pushID))
            #expect(harness.accepted(token: phone.voipToken).first?.priority == "10")

            try harness.core.uninstall(deviceID: phone.sandboxDevice.deviceID)
            let gone = try await harness.call(.POST, "/v1/messages", body: RelayAPITests.message)
                .decode(IngestReceipt.self)
            let status = try await harness.push(try #require(gone.pushes.first).pushID, reaches: .tokenDead)
            #expect(status.reason == "Unregistered")
            let device = try await harness.call(.GET, "/v1/devices/\(phone.deviceID)").decode(DeviceView.self)
            #expect(device.messagingToken == nil)
        }
    }
}

/// Fixes for what the OpenAPI conformance test found.
@Suite("Relay API edges", .timeLimit(.minutes(2)))
struct RelayAPIEdgeTests {
    @Test("message_ttl is bounded (no overflow), a platform cannot change on re-activation, unknown routes answer JSON")
    func edges() async throws {
        try await RelayHarness.with { harness in
            for ttl in ["0", "-1", "2592001", "9223372036854775807"] {
                let reply = try await harness.call(
                    .PUT,
                    "/v1/apps/com.example.chat",
                    body: #"{"team_id":"TEAM123456","message_ttl":\#(ttl)}"#
                )
                #expect(reply.status == 400 && reply.json["field"] as? String == "message_ttl", "\(ttl): \(reply.text)")
            }
            let phone = try await harness.phone(user: "u1")
            let switched = ActivationRequest(
                userID: "u1",
                app: RelayHarness.bundleID,
                platform: .android,
                publicKey: KeyPair.generate().publicKey.base64,
                deviceID: phone.deviceID
            )
            let reply = try await harness.call(.POST, "/v1/activations", json: switched)
            #expect(reply.status == 400 && reply.json["field"] as? String == "platform", "\(reply.text)")
            let unknown = try await harness.call(.GET, "/v1/no-such-route")
            #expect(unknown.status == 404 && unknown.json["error"] as? String == "not_found")
        }
    }
}
