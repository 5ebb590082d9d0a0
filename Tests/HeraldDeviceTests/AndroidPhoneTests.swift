import AsyncHTTPClient
import Foundation
import HeraldDevice
import HeraldSimulation
import HeraldStore
import Testing

@testable import HeraldCommands

/// The emulated phone in Android mode against a real sandbox (FCM side), relay and provider.
@Suite("Emulated Android phone, end to end", .timeLimit(.minutes(3)))
struct AndroidPhoneTests {
    static var android: DeviceFlowTests.Tweaks {
        var tweaks = DeviceFlowTests.Tweaks()
        tweaks.platform = .android
        return tweaks
    }

    @Test("a late FCM token restarts the session once; no VoIP token is ever expected")
    func lateToken() async throws {
        var tweaks = Self.android
        tweaks.messagingTokenDelay = .milliseconds(300)
        try await DeviceFlowTests.withPhone(tweaks) { phone, _, _ in
            try await phone.wait("push available with the FCM token") {
                DeviceFlowTests.started($0, messaging: true, voip: false) && $0.pushAvailable
            }
            #expect(phone.sessionCount == 2)
            #expect(phone.store.tokens().messaging?.contains(":APA91b") == true)
            #expect(phone.store.registration() != nil)
        }
    }

    @Test("a message arrives as a data message the app opens itself: sender and text shown")
    func messageShown() async throws {
        try await DeviceFlowTests.withPhone(Self.android) { phone, endpoints, backend in
            try await phone.wait("the FCM token") { DeviceFlowTests.started($0, messaging: true, voip: false) }
            let receipt = try await backend.post(
                "/v1/messages",
                #"{"to":"u1","from":{"id":"a","name":"Dana"},"conversation":"case-9","text":"Your parcel left the depot"}"#
            )
            #expect(receipt.pushes.count == 1)
            try await phone.wait("the notification") { !$0.notifications.isEmpty }
            let shown = try #require(phone.notifications.first)
            #expect(shown.title == "Dana" && shown.body == "Your parcel left the depot")
            #expect(shown.thread == "case-9" && !shown.fetchOnTap)
            #expect(phone.diagnostics.isEmpty)
            #expect(phone.timeline.all.contains { $0.step == "messaging service opened the sealed content" })
            #expect(try await phone.tap(shown) == "Your parcel left the depot")

            // The same capture, as the sandbox's FCM inspection shows it, opens in the harness.
            let response = try await backend.http.execute(
                HTTPClientRequest(url: endpoints.sandboxURL + "/sandbox/fcm/inspection"),
                timeout: .seconds(10)
            )
            let capture = Data(try await response.body.collect(upTo: 1 << 20).readableBytesView)
            let outcome = try await ExtensionCommand.open(capture, store: phone.store, budget: .seconds(1))
            #expect(outcome.pushType == "fcm" && outcome.opened)
            #expect(outcome.notification?.body == "Your parcel left the depot")
        }
    }

    @Test("a Huawei phone: a Push Kit token, a message as Push Kit's data message, opened and shown, a tap")
    func huaweiMessageShown() async throws {
        var tweaks = Self.android
        tweaks.platform = .huawei
        try await DeviceFlowTests.withPhone(tweaks) { phone, _, backend in
            try await phone.wait("the Push Kit token") { DeviceFlowTests.started($0, messaging: true, voip: false) }
            #expect(phone.timeline.all.contains { $0.step == "Push Kit token received" })
            let receipt = try await backend.post(
                "/v1/messages",
                #"{"to":"u1","from":{"id":"a","name":"Dana"},"conversation":"case-9","text":"Your parcel left the depot"}"#
            )
            #expect(receipt.pushes.count == 1 && receipt.skipped.isEmpty)
            try await phone.wait("the notification") { !$0.notifications.isEmpty }
            let shown = try #require(phone.notifications.first)
            #expect(shown.title == "Dana" && shown.body == "Your parcel left the depot")
            #expect(phone.diagnostics.isEmpty)
            #expect(try await phone.tap(shown) == "Your parcel left the depot")
        }
    }

    @Test("a call raises the incoming-call screen with the sealed caller; the user answers")
    func callRings() async throws {
        try await DeviceFlowTests.withPhone(Self.android) { phone, _, backend in
            try await phone.wait("the FCM token") { DeviceFlowTests.started($0, messaging: true, voip: false) }
            let receipt = try await backend.post(
                "/v1/calls",
                #"{"to":"u1","from":{"id":"a","name":"Dana"},"call_id":"call-5","media":"video"}"#
            )
            #expect(receipt.pushes.count == 1 && receipt.skipped.isEmpty)
            try await phone.wait("the call screen") { !$0.callKit.calls.isEmpty }
            let call = try #require(phone.callKit.calls.first)
            #expect(call.callID == "call-5" && call.callerName == "Dana" && call.video && call.state == .ringing)
            #expect(phone.timeline.all.contains { $0.from == "fcm-service" && $0.to == "call-screen" })
            #expect(phone.callKit.answer(callID: "call-5"))
            #expect(phone.callKit.calls.first?.state == .answered)
        }
    }

    @Test("the messaging service: foreign data is ignored, unopenable content keeps the app's generic text")
    func messagingServiceRules() throws {
        let directory = NSTemporaryDirectory() + "herald-fms-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let service = FirebaseMessagingServiceEmulator(
            store: try AppGroupStore(directory: directory),
            clock: TestClock(frozenAt: 1)
        )
        guard case .ignored = service.onMessageReceived(["hello": "world"]) else {
            Issue.record("foreign data was not ignored")
            return
        }
        guard
            case .notification(let shown, let opened, let diagnostic, _) = service.onMessageReceived([
                "v": "1", "kind": "message", "message_id": "m1", "conversation_id": "c", "policy": "full",
                "sealed": "not-an-envelope",
            ])
        else {
            Issue.record("a message did not become a notification")
            return
        }
        #expect(!opened && shown.title == "New message" && diagnostic != nil)
        guard
            case .notification(let none, false, nil, nil) = service.onMessageReceived([
                "v": "1", "kind": "message", "message_id": "m2", "conversation_id": "c", "policy": "none",
            ])
        else {
            Issue.record("policy none did not become a generic notification")
            return
        }
        #expect(none.fetchOnTap)
        guard
            case .call(_, let caller, _, let why?) = service.onMessageReceived([
                "v": "1", "kind": "call", "call_id": "k", "sealed": "garbage",
            ])
        else {
            Issue.record("an unopenable call did not ring as unknown")
            return
        }
        #expect(caller == "Unknown caller" && !why.isEmpty)
    }
}
