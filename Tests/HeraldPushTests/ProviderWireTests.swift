import Foundation
import HeraldProviderAPI
import HeraldPush
import Testing

/// The batch API's JSON is the wire form of `Push` and `PushOutcome`: nothing is lost crossing it,
/// and nothing unknown is taken for something known.
@Suite(.timeLimit(.minutes(1)))
struct ProviderWireTests {
    static let alert = Push(
        id: "p1",
        token: String(repeating: "ab", count: 32),
        payload: .apns(
            APNsPayload(
                topic: "com.example.chat",
                type: .alert,
                priority: .conserve,
                apnsID: "0190C0DE-0000-7000-8000-000000000001",
                json: #"{"aps":{"alert":"x"}}"#
            )
        ),
        expiration: 1_900_000_000,
        collapseID: "order-1"
    )

    static let call = Push(
        id: "p2",
        token: String(repeating: "cd", count: 32),
        payload: .apns(
            APNsPayload(
                topic: "com.example.chat.voip",
                type: .voip,
                priority: .immediate,
                apnsID: "0190C0DE-0000-7000-8000-000000000002",
                json: #"{"herald":{}}"#
            )
        ),
        expiration: 0
    )

    static let android = Push(
        id: "p3",
        token: "fcm-token:1",
        payload: .fcm(
            FCMPayload(
                package: "com.example.chat",
                priority: .high,
                data: ["kind": "message", "sealed": "AT/+=", "quote": "\"a\" \\ b"]
            )
        ),
        expiration: nil,
        collapseID: "c"
    )

    /// A fleet's push: its key and environment, or its account, cross as types.
    static let routedAlert = Push(
        id: "p4",
        token: String(repeating: "ef", count: 32),
        payload: .apns(
            APNsPayload(
                topic: "com.example.beta",
                type: .alert,
                priority: .conserve,
                apnsID: "0190C0DE-0000-7000-8000-000000000004",
                json: #"{"aps":{"alert":"x"}}"#,
                key: "team-b",
                environment: .production
            )
        ),
        expiration: 1_900_000_000,
        traceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
    )

    static let routedAndroid = Push(
        id: "p5",
        token: "fcm-token:5",
        payload: .fcm(FCMPayload(package: "com.example.beta", priority: .high, data: ["k": "v"], account: "project-b")),
        expiration: nil,
        // A traced push's claim span crosses with it (docs/tracing.md).
        traceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    )

    @Test(
        "a push crosses the wire and back unchanged",
        arguments: [alert, call, android, routedAlert, routedAndroid]
    )
    func pushRoundTrip(push: Push) throws {
        let wire = try JSONDecoder().decode(
            ProviderPush.self,
            from: try JSONEncoder().encode(ProviderPush(push))
        )
        #expect(
            try wire.push(makeAPNsID: {
                Issue.record("the push had an apns-id")
                return ""
            }).get() == push
        )
    }

    @Test("an APNs push without an apns-id gets one made by the provider")
    func madeAPNsID() throws {
        var wire = ProviderPush(Self.alert)
        wire.apnsID = nil
        guard case .apns(let apns) = try wire.push(makeAPNsID: { "MADE" }).get().payload else {
            Issue.record("not an APNs push")
            return
        }
        #expect(apns.apnsID == "MADE")
    }

    @Test("pushes the provider cannot send are refused with a reason, not guessed at")
    func refusals() {
        var noType = ProviderPush(Self.alert)
        noType.pushType = nil
        var badPriority = ProviderPush(Self.alert)
        badPriority.priority = 7
        var notData = ProviderPush(Self.android)
        notData.payload = #"{"n":1}"#
        for (wire, reason) in [
            (noType, "push_type is required for APNs"),
            (badPriority, "BadPriority"),
            (notData, "the payload of an FCM push must be a JSON object of strings"),
        ] {
            #expect(throws: ProviderPushRefusal(reason)) { try wire.push(makeAPNsID: { "x" }).get() }
        }
    }

    @Test(
        "every outcome crosses the wire and back unchanged",
        arguments: [
            PushOutcome.delivered(receipt: nil),
            .delivered(receipt: "unique-1"),
            .tokenDead(reason: "Unregistered", since: 1_700_000_000_123),
            .tokenDead(reason: "BadDeviceToken", since: nil),
            .failed(reason: "PayloadTooLarge", status: 413),
            .failed(reason: "the provider refused it", status: nil),
            .retryLater(reason: "ServiceUnavailable", after: nil),
            .retryLater(reason: "QUOTA_EXCEEDED", after: .seconds(30)),
            .expired,
        ]
    )
    func outcomeRoundTrip(outcome: PushOutcome) throws {
        for push in [Self.alert, Self.android] {
            let result = ProviderPushResult(push: push, outcome: outcome)
            let decoded = try JSONDecoder().decode(ProviderPushResult.self, from: try JSONEncoder().encode(result))
            #expect(decoded.pushOutcome == outcome)
            #expect(decoded.outcome == outcome.kind)
            #expect(decoded.id == push.id)
        }
    }

    @Test("the wire says which network's receipt a delivery carries, and the status of a dead token")
    func wireDetails() {
        let apns = ProviderPushResult(push: Self.alert, outcome: .delivered(receipt: "u"))
        #expect(apns.uniqueID == "u" && apns.name == nil && apns.apnsID == "0190C0DE-0000-7000-8000-000000000001")
        let fcm = ProviderPushResult(push: Self.android, outcome: .delivered(receipt: "projects/p/messages/1"))
        #expect(fcm.name == "projects/p/messages/1" && fcm.uniqueID == nil && fcm.apnsID == nil)
        #expect(
            ProviderPushResult(push: Self.alert, outcome: .tokenDead(reason: "Unregistered", since: 1)).status == 410
        )
        #expect(
            ProviderPushResult(push: Self.android, outcome: .tokenDead(reason: "UNREGISTERED", since: nil)).status
                == 404
        )
    }

    @Test("an outcome name the wire does not define fails to decode instead of becoming a retry")
    func unknownOutcome() {
        for name in ["deliverd", "retry", "", "DELIVERED"] {
            let json = #"{"outcome":"\#(name)","id":"p1"}"#
            #expect(throws: DecodingError.self) {
                try JSONDecoder().decode(ProviderPushResult.self, from: Data(json.utf8))
            }
        }
    }

    @Test("an unknown network fails to decode")
    func unknownNetwork() {
        let json = #"{"id":"p","network":"wns","device_token":"t","topic":"x","priority":10,"payload":"{}"}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ProviderPush.self, from: Data(json.utf8)) }
    }

    @Test("the route's wire names; an environment that is not one of APNs' two is refused")
    func routeOnTheWire() throws {
        let text = String(decoding: try JSONEncoder().encode(ProviderPush(Self.routedAlert)), as: UTF8.self)
        #expect(text.contains(#""apns_key":"team-b""#) && text.contains(#""apns_environment":"production""#))
        let android = String(decoding: try JSONEncoder().encode(ProviderPush(Self.routedAndroid)), as: UTF8.self)
        #expect(android.contains(#""fcm_account":"project-b""#))
        let plain = String(decoding: try JSONEncoder().encode(ProviderPush(Self.alert)), as: UTF8.self)
        #expect(!plain.contains("apns_key") && !plain.contains("apns_environment"), "absent: the defaults")
        let staging = text.replacingOccurrences(of: #""production""#, with: #""staging""#)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(ProviderPush.self, from: Data(staging.utf8))
        }
    }
}
