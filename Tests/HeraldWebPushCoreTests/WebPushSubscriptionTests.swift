import Crypto
import Foundation
import HeraldEncoding
import HeraldPush
import Testing

@testable import HeraldWebPushCore

@Suite("Web Push subscriptions, requests and answers", .timeLimit(.minutes(1)))
struct WebPushSubscriptionTests {
    static let browserKey = P256.KeyAgreement.PrivateKey()
    static let p256dh = Array(browserKey.publicKey.x963Representation)
    static let auth: [UInt8] = Array(0..<16)
    static let endpoint = "https://fcm.googleapis.com/fcm/send/dXJsOmV4YW1wbGU:APA91bX"

    static func parse(
        endpoint: String = endpoint,
        p256dh: String = Base64URL.encode(p256dh),
        auth: String = Base64URL.encode(auth),
        allowPrivate: Bool = false
    ) throws(WebPushError) -> WebPushSubscription {
        try WebPushSubscription.parse(
            endpoint: endpoint,
            p256dh: p256dh,
            auth: auth,
            allowPrivateEndpoints: allowPrivate
        )
    }

    @Test("toJSON's keys with or without padding, or in standard base64, read the same")
    func keyEncodings() throws {
        let plain = try Self.parse()
        #expect(plain.endpoint == Self.endpoint)
        #expect(plain.keys.p256dh == Self.p256dh && plain.keys.auth == Self.auth)
        let standard = Data(Self.p256dh).base64EncodedString()
        #expect(standard.hasSuffix("="))
        #expect(try Self.parse(p256dh: standard, auth: Data(Self.auth).base64EncodedString()) == plain)
        #expect(
            try Self.parse(p256dh: Base64URL.encode(Self.p256dh) + "=", auth: Base64URL.encode(Self.auth) + "==")
                == plain
        )
    }

    struct Refusal: CustomTestStringConvertible, Sendable {
        let name: String
        let field: String
        let parse: @Sendable () throws -> WebPushSubscription
        var testDescription: String { name }
    }

    /// Endpoints refused, by what is wrong with them.
    static let endpoints: [(String, String)] = [
        ("empty endpoint", ""), ("http endpoint", "http://push.example.net/x"), ("relative endpoint", "/wp/1"),
        ("no host", "https:///wp/1"), ("user info", "https://u:p@push.example.net/x"),
        ("2049 characters", "https://push.example.net/" + String(repeating: "a", count: 2049 - 25)),
        ("loopback", "https://127.0.0.1:2199/wp/1"), ("localhost", "https://localhost/wp/1"),
        ("a name under localhost", "https://a.localhost./x"), ("RFC 1918 10/8", "https://10.1.2.3/x"),
        ("RFC 1918 172.16/12", "https://172.31.0.1/x"), ("RFC 1918 192.168/16", "https://192.168.1.1/x"),
        ("link-local v4", "https://169.254.169.254/x"), ("unspecified v4", "https://0.0.0.0/x"),
        ("a short numeric form", "https://127.1/x"), ("a decimal address", "https://2130706433/x"),
        ("v6 loopback", "https://[::1]/x"), ("v6 unspecified", "https://[::]/x"),
        ("v6 unique local", "https://[fd12::1]/x"), ("v6 link-local", "https://[fe80::1]/x"),
        ("v4-mapped loopback", "https://[::ffff:127.0.0.1]/x"),
    ]

    static let refusals: [Refusal] =
        endpoints.map { name, endpoint in
            Refusal(name: name, field: "subscription.endpoint") { try parse(endpoint: endpoint) }
        } + [
            Refusal(name: "p256dh of 64 bytes", field: "subscription.keys.p256dh") {
                try parse(p256dh: Base64URL.encode(Array(p256dh.dropLast())))
            },
            Refusal(name: "p256dh compressed", field: "subscription.keys.p256dh") {
                try parse(p256dh: Base64URL.encode(Array(browserKey.publicKey.compressedRepresentation)))
            },
            Refusal(name: "p256dh not a point", field: "subscription.keys.p256dh") {
                try parse(p256dh: Base64URL.encode([4] + Array(repeating: 1, count: 64)))
            },
            Refusal(name: "p256dh not base64", field: "subscription.keys.p256dh") { try parse(p256dh: "!!!") },
            Refusal(name: "p256dh with wrong padding", field: "subscription.keys.p256dh") {
                try parse(p256dh: Base64URL.encode(p256dh) + "==")
            },
            Refusal(name: "auth of 15 bytes", field: "subscription.keys.auth") {
                try parse(auth: Base64URL.encode(Array(auth.dropLast())))
            },
            Refusal(name: "auth empty", field: "subscription.keys.auth") { try parse(auth: "") },
        ]

    @Test("refused subscriptions name their field", arguments: refusals)
    func refuses(_ refusal: Refusal) {
        let error = #expect(throws: WebPushError.self) { try refusal.parse() }
        #expect(error?.field == refusal.field)
    }

    @Test("private endpoints are taken when allowed (the sandbox's), public ones always")
    func privateAllowed() throws {
        #expect(try Self.parse(endpoint: "https://127.0.0.1:2199/wp/1", allowPrivate: true).endpoint.hasSuffix("/wp/1"))
        for host in [
            "updates.push.services.mozilla.com", "web.push.apple.com", "8.8.8.8", "[2001:db8::1]", "172.32.0.1",
            "cafe1.example",
        ] {
            #expect(throws: Never.self) { try Self.parse(endpoint: "https://\(host)/x") }
        }
    }

    // MARK: - Requests

    @Test("request headers, and the TTL and Topic rules")
    func requestHeaders() throws {
        let request = try WebPushRequest(ttl: 60, urgency: .high, topic: "call-1_A")
        #expect(
            request.headers.map { "\($0.0): \($0.1)" } == [
                "TTL: 60", "Urgency: high", "Topic: call-1_A", "Content-Encoding: aes128gcm",
                "Content-Type: application/octet-stream",
            ]
        )
        #expect(
            try WebPushRequest(ttl: 0, urgency: .veryLow).headers.map(\.0) == [
                "TTL", "Urgency", "Content-Encoding", "Content-Type",
            ]
        )
        #expect(try WebPushRequest(ttl: 0, urgency: .veryLow).headers[1].1 == "very-low")
        #expect(throws: Never.self) { try WebPushRequest(ttl: 2_419_200, topic: String(repeating: "a", count: 32)) }
        for (ttl, topic, field) in [
            (-1, nil, "ttl"), (2_419_201, nil, "ttl"), (1, "", "topic"),
            (1, String(repeating: "a", count: 33), "topic"),
            (1, "a b", "topic"), (1, "a=", "topic"), (1, "a+b", "topic"), (1, "é", "topic"),
        ] as [(Int, String?, String)] {
            let error = #expect(throws: WebPushError.self) { try WebPushRequest(ttl: ttl, topic: topic) }
            #expect(error?.field == field)
        }
        #expect(WebPushRequest.ttl(header: "0") == 0)
        #expect(WebPushRequest.ttl(header: " 86400 ") == 86_400)
        #expect(WebPushRequest.ttl(header: "99999999999999999999999") == Int.max)
        for bad in ["", "-1", "1.5", "1e3", "abc", "+5"] { #expect(WebPushRequest.ttl(header: bad) == nil) }
    }

    // MARK: - Answers

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test(
        "push service answers as outcomes",
        arguments: [
            (201, nil, nil, PushOutcome.delivered(receipt: nil)),
            (202, nil, nil, .delivered(receipt: nil)),
            (200, nil, nil, .delivered(receipt: nil)),
            (404, nil, nil, .tokenDead(reason: "subscription expired (404)", since: nil)),
            (
                410, nil, "push subscription has unsubscribed or expired.",
                .tokenDead(
                    reason: "subscription gone (410): push subscription has unsubscribed or expired.",
                    since: nil
                )
            ),
            (413, nil, nil, .failed(reason: "payload too large (413)", status: 413)),
            (
                400, nil, "UnauthorizedRegistration\nmore",
                .failed(reason: "refused by the push service (400): UnauthorizedRegistration", status: 400)
            ),
            (401, nil, nil, .failed(reason: "VAPID authorization refused (401)", status: 401)),
            (403, nil, "BadJwtToken", .failed(reason: "VAPID authorization refused (403): BadJwtToken", status: 403)),
            (429, "30", nil, .retryLater(reason: "rate limited by the push service (429)", after: .seconds(30))),
            (
                429, "Fri, 15 Jan 2027 08:01:00 GMT", nil,
                .retryLater(reason: "rate limited by the push service (429)", after: .seconds(60))
            ),
            (429, "soon", nil, .retryLater(reason: "rate limited by the push service (429)", after: nil)),
            (429, nil, nil, .retryLater(reason: "rate limited by the push service (429)", after: nil)),
            (503, "7", nil, .retryLater(reason: "push service unavailable (503)", after: .seconds(7))),
            (500, "7", nil, .retryLater(reason: "push service error (500)", after: nil)),
            (502, nil, nil, .retryLater(reason: "push service error (502)", after: nil)),
            (301, nil, nil, .failed(reason: "refused by the push service (301)", status: 301)),
        ] as [(Int, String?, String?, PushOutcome)]
    )
    func answers(status: Int, retryAfter: String?, body: String?, outcome: PushOutcome) {
        #expect(WebPushAnswer.outcome(status: status, retryAfter: retryAfter, body: body, now: Self.now) == outcome)
    }

    @Test("Retry-After as an HTTP date counts from now; a past date is no wait")
    func retryAfterDates() {
        // 1_800_000_000 is Fri, 15 Jan 2027 08:00:00 GMT.
        #expect(WebPushAnswer.delay(retryAfter: "Fri, 15 Jan 2027 08:00:00 GMT", now: Self.now) == .zero)
        #expect(WebPushAnswer.delay(retryAfter: "Fri, 15 Jan 2027 08:01:30 GMT", now: Self.now) == .seconds(90))
        #expect(WebPushAnswer.delay(retryAfter: "Fri, 15 Jan 2027 07:00:00 GMT", now: Self.now) == .zero)
        #expect(WebPushAnswer.delay(retryAfter: "2027-01-15", now: Self.now) == nil)
    }
}
