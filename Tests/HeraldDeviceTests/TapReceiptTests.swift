import Foundation
import HeraldCrypto
import HeraldDomain
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import Testing

@testable import HeraldCommands
@testable import HeraldDevice

/// The app's `tapped` receipt (docs/receipts.md): a shown notification keeps the id of the push
/// it came with, and a tap on it reports that push once, signed like the extension's receipts.
@Suite("The app's tapped receipt", .timeLimit(.minutes(3)))
struct TapReceiptTests {
    /// A shown notification with `pushID`.
    static func shown(_ pushID: String?) -> DisplayedNotification {
        var notification = DisplayedNotification(
            title: "Dana",
            body: "hi",
            thread: "c",
            messageID: "m",
            conversationID: "c",
            fetchOnTap: false,
            shownAt: 0
        )
        notification.pushID = pushID
        return notification
    }

    /// Taps in order, and the push each one's receipt names (nil: none sent).
    static let taps: [([String?], [String?])] = [
        (["p-1"], ["p-1"]),
        (["p-1", "p-1"], ["p-1", nil]),
        (["p-1", "p-2", "p-1"], ["p-1", "p-2", nil]),
        ([nil], [nil]),
        ([nil, "p-1", nil], [nil, "p-1", nil]),
    ]

    @Test(
        "one receipt per push: the first tap names it, a second tap on it none, another push its own, no push id none",
        arguments: taps
    )
    func oncePerPush(taps: [String?], expected: [String?]) {
        var receipts = TapReceipts()
        #expect(taps.map { receipts.tap(Self.shown($0)) } == expected)
    }

    @Test("every notification shown for a push keeps its push id, on iOS and Android; one that named none has none")
    func keepsPushID() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let target = PushTarget(deviceID: pairing.deviceID, pushID: "push-1")
        let app = AppRecord(id: "com.example.chat", teamID: "T")
        let call = CallContent(callID: "call-9", callerID: "a", callerName: "Dana", media: .audio, startedAt: 1)
        let callback = CallbackContent(
            callbackID: "cb-1",
            sequence: 1,
            serviceID: "svc",
            dialog: .standard,
            pushedAt: 1
        )
        // Each shown once: a new extension that remembers nothing.
        func nse() -> NotificationServiceEmulator {
            NotificationServiceEmulator(store: pairing.store, rememberedPushes: 0)
        }
        let messaging = FirebaseMessagingServiceEmulator(store: pairing.store, rememberedPushes: 0)
        func shown(_ outcome: FirebaseMessagingServiceEmulator.Outcome) -> DisplayedNotification? {
            guard case .notification(let notification, _, _, _) = outcome else { return nil }
            return notification
        }

        let message = try pairing.messagePayload()
        let tampered = message.replacingOccurrences(of: "\"sealed\":\"A", with: "\"sealed\":\"B")
        let missed = try PushPayload.missedCall(call, for: target, sealer: pairing.sealer)
        let shownIOS: [(String, DisplayedNotification?)] = [
            ("message", await nse().receive(payload: message, pushType: "alert").notification),
            ("tampered message", await nse().receive(payload: tampered, pushType: "alert").notification),
            ("missed call", await nse().receive(payload: missed, pushType: "alert").notification),
            (
                "callback",
                nse().receiveCallback(
                    payload: try CallbackPayload.apns(callback, app: app, for: target, sealer: pairing.sealer),
                    pushType: "alert"
                ).notification
            ),
        ]
        let shownAndroid: [(String, DisplayedNotification?)] = [
            ("message", shown(messaging.onMessageReceived(try pairing.messageData()))),
            (
                "missed call",
                shown(
                    messaging.onMessageReceived(
                        try PushPayload.fcmMissedCall(call, for: target, sealer: pairing.sealer)
                    )
                )
            ),
            (
                "callback",
                messaging.onCallbackReceived(
                    try CallbackPayload.fcm(callback, app: app, for: target, sealer: pairing.sealer)
                ).notification
            ),
        ]
        for (kind, notification) in shownIOS + shownAndroid {
            #expect(notification?.pushID == "push-1", "\(kind)")
        }
        #expect(shownIOS[2].1?.title == "Missed call" && shownAndroid[2].1?.title == "Agent is available right now")

        let withoutID = message.replacingOccurrences(of: #""push_id":"push-1","#, with: "")
        #expect(withoutID != message)
        let plain = await nse().receive(payload: withoutID, pushType: "alert").notification
        #expect(plain != nil && plain?.pushID == nil)
        var data = try pairing.messageData()
        data["push_id"] = nil
        #expect(shown(messaging.onMessageReceived(data)).map { $0.pushID == nil } == true)
    }

    /// `GET /v1/webhooks/events`, as far as these tests read it.
    struct Events: Decodable {
        struct Event: Decodable {
            var type: String
            var orderingKey: String
            var data: WebhookJSON

            enum CodingKeys: String, CodingKey {
                case type, data
                case orderingKey = "ordering_key"
            }
        }
        var events: [Event]
    }

    @Test(
        "a tap reports the push: device_stage tapped, the receipt, and push.tapped written; a second tap sends none",
        arguments: [DevicePlatform.ios, .android]
    )
    func tapReported(platform: DevicePlatform) async throws {
        var tweaks = DeviceFlowTests.Tweaks()
        tweaks.platform = platform
        try await DeviceFlowTests.withPhone(tweaks) { phone, endpoints, backend in
            try await phone.wait("the tokens") { DeviceFlowTests.started($0, voip: platform == .ios) }
            let pushID = try await DeviceFlowTests.sendShown("tap me", to: phone, backend)
            let shown = try #require(phone.notifications.first)
            #expect(shown.pushID == pushID)
            #expect(try await backend.status(pushID).deviceStage == .shown)

            #expect(try await phone.tap(shown) == "tap me")
            let tapped = phone.receipts.filter { $0.stage == .tapped }
            #expect(tapped.map(\.pushID) == [pushID])
            let status = try await backend.status(pushID)
            #expect(status.deviceStage == .tapped)
            #expect(status.receipts.map(\.stage) == [.delivered, .opened, .shown, .tapped])
            let receipt = try #require(status.receipts.last)
            #expect(receipt.deviceTime == tapped.first?.deviceTime && receipt.failure == nil)
            let step = phone.timeline.all.last { $0.step == "receipt sent" }
            #expect(step?.detail == "tapped" && step?.from == "app" && step?.to == "relay")

            // Written with the receipt, in its transaction: there when the relay answered.
            let list: Events = try await backend.request(
                .GET,
                "/v1/webhooks/events?app=\(endpoints.bundleID)&limit=500",
                nil,
                expect: 200
            )
            let events = list.events.filter { $0.orderingKey == "push:" + pushID && $0.type == "push.tapped" }
            #expect(events.count == 1)
            guard case .object(let data) = try #require(events.first).data else {
                Issue.record("push.tapped carries no data object")
                return
            }
            #expect(data["stage"] == .string("tapped") && data["push_id"] == .string(pushID))
            #expect(data["device_time"] == .integer(receipt.deviceTime))

            // The same notification tapped again: the conversation opens, nothing is reported.
            let before = phone.timeline.all.count { $0.step == "receipt sent" }
            #expect(try await phone.tap(shown) == "tap me")
            #expect(phone.timeline.all.count { $0.step == "receipt sent" } == before)
            #expect(phone.receipts.count { $0.stage == .tapped } == 1)

            // A receipt the relay refuses (no such push) is a diagnostic; the tap still opens.
            var stranger = shown
            stranger.pushID = "no-such-push"
            #expect(try await phone.tap(stranger) == "tap me")
            #expect(phone.diagnostics.contains { $0.contains("tapped receipt of push no-such-push") })
        }
    }

    @Test("a callback's dialog, tapped: the relay takes the tapped receipt for the callback's push")
    func callbackTapped() async throws {
        try await DeviceFlowTests.withPhone { phone, _, backend in
            try await phone.wait("both tokens") { DeviceFlowTests.started($0) }
            let _: CallbackView = try await backend.request(
                .POST,
                "/v1/callbacks",
                #"{"user_id":"u1","service_id":"svc-77"}"#,
                expect: 201
            )
            try await phone.wait("the dialog") { !$0.callbacks.all.isEmpty }
            let shown = try #require(phone.notifications.first)
            let pushID = try #require(shown.pushID)
            try await phone.tap(shown)
            #expect(phone.receipts.map(\.stage) == [.tapped] && phone.receipts.first?.pushID == pushID)
            #expect(try await backend.status(pushID).deviceStage == .tapped)
            #expect(phone.diagnostics.isEmpty, "\(phone.diagnostics)")
        }
    }
}
