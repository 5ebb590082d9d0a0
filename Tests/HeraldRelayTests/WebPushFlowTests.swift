import Foundation
import HeraldCrypto
import HeraldEncoding
import HeraldPush
import HeraldRelay
import HeraldRelayAPI
import HeraldSandbox
import HeraldStore
import HeraldTestSupport
import HeraldWebPushCore
import Testing

/// Browsers: activation with a subscription → message / call → what the sandbox's push service
/// received (ciphertext, headers, VAPID), decrypted as the browser does and opened as its service
/// worker does.
@Suite("Relay flows in browsers (Web Push)", .timeLimit(.minutes(2)))
struct WebPushFlowTests {
    /// The one accepted request for the browser, decrypted.
    static func received(
        _ harness: RelayHarness,
        by browser: RelayHarness.Browser
    ) throws -> (SandboxWebPushInspectionRecord, [String: String]) {
        let record = try #require(harness.acceptedWebPush(endpoint: browser.endpoint).last)
        return (record, try browser.decrypt(try #require(record.body)))
    }

    @Test("a message: RFC 8291 ciphertext for the subscription, VAPID-signed, sealed for the device inside")
    func messageIsEncryptedAndSealed() async throws {
        try await RelayHarness.with { harness in
            let browser = try await harness.browser(user: "alice")
            let secret = "Your refund of 42 EUR was approved"
            let receipt = try await harness.send(to: "alice", text: secret)
            #expect(receipt.pushes.map(\.deviceID) == [browser.phone.deviceID] && receipt.skipped.isEmpty)

            let (record, fields) = try Self.received(harness, by: browser)
            #expect(record.headers["urgency"] == "normal" && record.headers["content-encoding"] == "aes128gcm")
            let ttl = try #require(record.headers["ttl"].flatMap(Int.init))
            #expect((86_390...86_400).contains(ttl))
            let vapid = try #require(record.vapid)
            let app = try await harness.call(.GET, "/v1/apps/\(RelayHarness.bundleID)/web-push")
            #expect(vapid.k == (try app.decode(WebPushAppView.self)).applicationServerKey)
            #expect(vapid.sub.hasPrefix("mailto:") && vapid.aud.hasPrefix("https://127.0.0.1:"))
            #expect(record.location != nil && (record.bodySize ?? 0) <= 4096)
            #expect(fields["kind"] == "message" && fields["v"] == "1" && fields["message_id"] == receipt.id)
            // Nothing in clear outside the browser: the push service saw ciphertext only.
            let seen = (record.body ?? "") + record.headers.values.joined() + vapid.sub
            #expect(!seen.contains("refund") && !seen.contains("Dana") && !seen.contains(receipt.id))
            #expect(!fields.values.joined(separator: " ").contains("refund"))
            let content = try AndroidFlowTests.openMessage(fields, id: receipt.id, phone: browser.phone)
            #expect(content.text == secret && content.senderName == "Dana Agent" && !content.truncated)
        }
    }

    @Test(
        "VAPID keys per app: an app's own key is what its browsers subscribe with and signs its pushes; others get the default"
    )
    func vapidKeyPerApp() async throws {
        let own = VAPIDKey.generate()
        let signer = try VAPIDSigner(key: own, subject: "mailto:chat@herald.invalid")
        var setup = RelayHarness.Setup()
        setup.relay.fleet.applicationServerKeys[RelayHarness.bundleID] = own.applicationServerKey
        setup.webPush = { $0.signers[RelayHarness.bundleID] = signer }
        try await RelayHarness.with(setup) { harness in
            let mine = try await harness.call(.GET, "/v1/apps/\(RelayHarness.bundleID)/web-push")
            let app = try mine.decode(WebPushAppView.self)
            #expect(app.vapidKey == RelayHarness.bundleID && app.applicationServerKey == own.applicationServerKey)
            let saved = try await harness.call(.PUT, "/v1/apps/com.example.other", body: #"{"team_id":"TEAM123456"}"#)
            #expect(saved.status == 200, "\(saved.text)")
            let other = try await harness.call(.GET, "/v1/apps/com.example.other/web-push").decode(WebPushAppView.self)
            #expect(other.vapidKey == "default" && other.applicationServerKey != own.applicationServerKey)

            let browser = try await harness.browser(user: "ivy")
            _ = try await harness.send(to: "ivy", text: "hi")
            let (record, _) = try Self.received(harness, by: browser)
            #expect(record.vapid?.k == own.applicationServerKey && record.vapid?.sub == "mailto:chat@herald.invalid")
        }
    }

    @Test("a long text is cut to the 3,993 bytes a 4,096-byte Web Push body holds, and the cut is flagged")
    func longTextFits() async throws {
        try await RelayHarness.with { harness in
            let browser = try await harness.browser(user: "carol")
            let receipt = try await harness.send(to: "carol", text: AndroidFlowTests.longText)
            let (record, fields) = try Self.received(harness, by: browser)
            #expect((3800...WebPushPayload.maxPlaintext).contains(DataFields.json(fields).utf8.count))
            #expect((record.bodySize ?? 0) <= 4096)
            AndroidFlowTests.expectCut(try AndroidFlowTests.openMessage(fields, id: receipt.id, phone: browser.phone))
        }
    }

    @Test("a call is Urgency high with the call's TTL")
    func callIsUrgent() async throws {
        try await RelayHarness.with { harness in
            let browser = try await harness.browser(user: "bob")
            _ = try await harness.ring("bob", callID: "call-7")
            let (record, fields) = try Self.received(harness, by: browser)
            #expect(record.headers["urgency"] == "high")
            let ttl = try #require(record.headers["ttl"].flatMap(Int.init))
            #expect((25...30).contains(ttl))
            let call = try AndroidFlowTests.openCall(fields, id: "call-7", phone: browser.phone)
            #expect(call.callerName == "Dana Agent" && call.media == .video)
        }
    }

    @Test("410 from the push service: the subscription is dropped and never tried again")
    func goneSubscriptionIsDropped() async throws {
        try await RelayHarness.with { harness in
            let browser = try await harness.browser(user: "dave")
            try await harness.expectTokenDropped(browser.phone, user: "dave", reason: "subscription gone (410)")
            #expect(harness.core.webPushInspection(endpoint: browser.endpoint).count == 1, "tried once, never again")
        }
    }

    @Test("a renewed subscription: the next push goes to the new endpoint, encrypted for the new keys")
    func renewedSubscription() async throws {
        try await RelayHarness.with { harness in
            let old = try await harness.browser(user: "erin")
            // The browser subscribes again (its `pushsubscriptionchange`): a new endpoint and keys.
            let renewed = try await harness.browser(user: "erin-renewal")
            var update = TokenUpdateRequest()
            update.subscription = WebPushSubscriptionBody(
                endpoint: renewed.endpoint,
                keys: .init(
                    p256dh: Base64URL.encode(Array(renewed.privateKey.publicKey.x963Representation)),
                    auth: Base64URL.encode(renewed.auth)
                )
            )
            let answer = try await harness.call(
                .PUT,
                "/v1/devices/\(old.phone.deviceID)/tokens",
                auth: .bearer(old.phone.credential),
                json: update
            )
            #expect(answer.status == 200, "\(answer.text)")
            let reply = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "erin", text: "hi")
            )
            let receipt = try reply.decode(IngestReceipt.self)
            try await harness.push(try #require(receipt.pushes.first?.pushID), reaches: .delivered)
            #expect(harness.acceptedWebPush(endpoint: old.endpoint).isEmpty)
            let record = try #require(harness.acceptedWebPush(endpoint: renewed.endpoint).last)
            let fields = try renewed.decrypt(try #require(record.body))
            #expect(fields["message_id"] == receipt.id)
            _ = try AndroidFlowTests.openMessage(fields, id: receipt.id, phone: old.phone)
        }
    }

    @Test("bad subscriptions are a 400 naming the field, never stored")
    func badSubscriptionsAreRefused() async throws {
        try await RelayHarness.with { harness in
            let key = KeyPair.generate().publicKey.base64
            let p256dh = WebPushPlannerTests.p256dh
            let cases: [(endpoint: String, p256dh: String, auth: String, field: String)] = [
                ("http://push.example.net/wp/1", p256dh, WebPushPlannerTests.auth, "subscription.endpoint"),
                ("https://user@push.example.net/wp/1", p256dh, WebPushPlannerTests.auth, "subscription.endpoint"),
                ("https://push.example.net/wp/1", "BCVxsr7N", WebPushPlannerTests.auth, "subscription.keys.p256dh"),
                ("https://push.example.net/wp/1", p256dh, "AAAA", "subscription.keys.auth"),
            ]
            for test in cases {
                let body = """
                    {"user_id":"hank","app":"\(RelayHarness.bundleID)","platform":"web","public_key":"\(key)",\
                    "subscription":{"endpoint":"\(test.endpoint)","keys":{"p256dh":"\(test.p256dh)","auth":"\(test.auth)"}}}
                    """
                let reply = try await harness.call(.POST, "/v1/activations", body: body)
                #expect(reply.status == 400, "\(test.field): \(reply.text)")
                #expect(reply.json["field"] as? String == test.field, "\(reply.text)")
            }
            #expect(try await harness.store.deviceCount() == 0)
        }
    }

    @Test("a push service answering 503 slows neither APNs nor FCM: their pushes are delivered, the browser's waits")
    func failingPushServiceIsolated() async throws {
        try await RelayHarness.with { harness in
            let browser = try await harness.browser(user: "gina")
            let iphone = try await harness.phone(user: "gina")
            let android = try await harness.androidPhone(user: "gina")
            try harness.core.inject(webPushFault: SandboxWebPushFault(status: 503, retryAfter: 120, count: 1_000))
            let started = ContinuousClock.now
            let reply = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "gina", text: "hi")
            )
            let receipt = try reply.decode(IngestReceipt.self)
            #expect(receipt.pushes.count == 3)
            let byDevice = Dictionary(uniqueKeysWithValues: receipt.pushes.map { ($0.deviceID, $0.pushID) })
            try await harness.push(try #require(byDevice[iphone.deviceID]), reaches: .delivered, timeout: .seconds(5))
            try await harness.push(try #require(byDevice[android.deviceID]), reaches: .delivered, timeout: .seconds(5))
            let elapsed = ContinuousClock.now - started
            #expect(elapsed < .seconds(5), "APNs and FCM delivered in \(elapsed)")
            let web = try await harness.push(try #require(byDevice[browser.phone.deviceID]), reaches: .queued)
            #expect(web.reason?.contains("503") == true, "\(web.reason ?? "none")")
            #expect(harness.acceptedWebPush(endpoint: browser.endpoint).isEmpty)
        }
    }
}
