import HeraldCrypto
import HeraldPush
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldRelay

/// A browser's activation and subscription renewal, as data: what is taken, what is refused and
/// the field the refusal names, and what the device keeps.
@Suite("Web Push planner")
struct WebPushPlannerTests {
    /// RFC 8291 Appendix A's user agent: a valid P-256 point and a 16-byte secret.
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
    static let endpoint = "https://push.example.net/wp/abc123"

    static func subscription(
        endpoint: String = endpoint,
        p256dh: String = p256dh,
        auth: String = auth
    ) -> WebPushSubscriptionBody {
        WebPushSubscriptionBody(endpoint: endpoint, keys: .init(p256dh: p256dh, auth: auth))
    }

    static func request(
        platform: DevicePlatform = .web,
        messagingToken: String? = nil,
        subscription: WebPushSubscriptionBody? = subscription()
    ) -> ActivationRequest {
        var request = DevicePlannerTests.request(platform: platform, messagingToken: messagingToken)
        request.subscription = subscription
        return request
    }

    static func planner(allowPrivate: Bool = false) -> DevicePlanner {
        var configuration = RelayConfiguration()
        configuration.fleet.allowPrivateWebPushEndpoints = allowPrivate
        return DevicePlanner(configuration: configuration)
    }

    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var request: ActivationRequest
        var allowPrivate = false
        var refusal: String?
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a browser with its subscription", request: request()),
        Case(name: "a browser whose subscription comes later", request: request(subscription: nil)),
        Case(
            name: "a subscription on iOS",
            request: request(platform: .ios),
            refusal: "invalid_field:subscription"
        ),
        Case(
            name: "a browser with a messaging token",
            request: request(messagingToken: String(repeating: "a", count: 40), subscription: nil),
            refusal: "invalid_field:messaging_token"
        ),
        Case(
            name: "an http endpoint",
            request: request(subscription: subscription(endpoint: "http://push.example.net/wp/1")),
            refusal: "invalid_field:subscription.endpoint"
        ),
        Case(
            name: "a loopback endpoint",
            request: request(subscription: subscription(endpoint: "https://127.0.0.1:2199/wp/1")),
            refusal: "invalid_field:subscription.endpoint"
        ),
        Case(
            name: "a private endpoint",
            request: request(subscription: subscription(endpoint: "https://10.1.2.3/wp/1")),
            refusal: "invalid_field:subscription.endpoint"
        ),
        Case(
            name: "a loopback endpoint in sandbox mode",
            request: request(subscription: subscription(endpoint: "https://127.0.0.1:2199/wp/1")),
            allowPrivate: true
        ),
        Case(
            name: "a p256dh of the wrong length",
            request: request(subscription: subscription(p256dh: "BCVxsr7N_eNgVRqvHtD0zTZs")),
            refusal: "invalid_field:subscription.keys.p256dh"
        ),
        Case(
            name: "an auth secret of the wrong length",
            request: request(subscription: subscription(auth: "BTBZMqHH6r4Tts7J")),
            refusal: "invalid_field:subscription.keys.auth"
        ),
    ]

    @Test("a browser's activation", arguments: cases)
    func admission(_ test: Case) {
        let planner = Self.planner(allowPrivate: test.allowPrivate)
        let refusal = DevicePlannerTests.refusal { () throws(RelayError) in
            _ = try planner.admitActivation(test.request, app: StoreFixtures.app(), previous: nil)
        }
        #expect(refusal == test.refusal)
    }

    @Test("the endpoint is the messaging token, its keys go with it; a re-activation without one keeps both")
    func keysFollowTheEndpoint() throws {
        let planner = Self.planner()
        let admitted = try planner.admitActivation(Self.request(), app: StoreFixtures.app(), previous: nil)
        let subscription = try #require(admitted.subscription)
        let planned = planner.activation(
            Self.request(),
            app: StoreFixtures.app(),
            previous: nil,
            devicePublicKey: admitted.devicePublicKey,
            keys: DevicePlannerTests.keys("w1"),
            subscription: subscription,
            now: 1_000
        )
        guard case .saveDevice(let device) = try #require(planned.change.writes.first) else {
            Issue.record("an activation saves its device")
            return
        }
        #expect(device.platform == .web && device.messagingToken == Self.endpoint)
        #expect(device.webPushKeys == subscription.keys && device.webPushKeys?.auth.count == 16)

        var again = Self.request(subscription: nil)
        again.deviceID = "w1"
        let kept = planner.activation(
            again,
            app: StoreFixtures.app(),
            previous: device,
            devicePublicKey: admitted.devicePublicKey,
            keys: DevicePlannerTests.keys("w1"),
            now: 2_000
        )
        guard case .saveDevice(let rekeyed) = try #require(kept.change.writes.first) else { return }
        #expect(rekeyed.messagingToken == Self.endpoint && rekeyed.webPushKeys == device.webPushKeys)
    }

    @Test("a renewed subscription replaces the endpoint and the keys in one update; refused for a phone")
    func renewal() throws {
        let planner = Self.planner()
        var browser = StoreFixtures.device("w1")
        browser.platform = .web
        let renewed = Self.subscription(endpoint: "https://push.example.net/wp/renewed")
        let planned = try planner.tokenUpdate(
            TokenUpdateRequest(subscription: renewed),
            deviceID: "w1",
            current: browser,
            now: 9
        )
        guard case .updateTokens(let update) = try #require(planned.change.writes.first) else {
            Issue.record("a renewal updates the tokens")
            return
        }
        #expect(update.messaging == "https://push.example.net/wp/renewed" && update.webPushKeys?.p256dh.count == 65)
        #expect(update.applied(to: browser).webPushKeys == update.webPushKeys)
        #expect(planned.answer.messagingToken == "https://push.example.net/wp/renewed")

        let phone = StoreFixtures.device("d1")
        let refusal = DevicePlannerTests.refusal { () throws(RelayError) in
            _ = try planner.tokenUpdate(
                TokenUpdateRequest(subscription: renewed),
                deviceID: "d1",
                current: phone,
                now: 9
            )
        }
        #expect(refusal == "invalid_field:subscription")
    }

    @Test("a data message fits each carrier's budget as that network counts it")
    func carriers() {
        let fields = ["v": "1", "push_id": "p", "kind": "message", "note": "a/b \"quoted\""]
        #expect(DataCarrier.fcm.size(of: fields) == fields.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count })
        // JSON: braces, quotes, colons, commas and the escaped quotes count.
        #expect(DataCarrier.webPush.size(of: fields) == DataFields.json(fields).utf8.count)
        #expect(DataCarrier.webPush.size(of: fields) > DataCarrier.fcm.size(of: fields))
        #expect(DataCarrier.webPush.budget.bodyLimit == WebPushPayload.maxPlaintext)
        for carrier in DataCarrier.allCases {
            var withEnvelope = fields
            let room = carrier.plaintextCapacity(around: fields)
            withEnvelope["sealed"] = String(repeating: "A", count: (room + Envelope.overhead) * 4 / 3)
            #expect(carrier.size(of: withEnvelope) <= carrier.budget.bodyLimit, "\(carrier)")
        }
    }
}
