import Foundation
import HeraldCrypto
import HeraldDevice
import HeraldRelayAPI
import HeraldStore
import Testing

@testable import HeraldCommands

/// The emulated phone and a callback (seed 002): the NSE (iOS) or the messaging service
/// (Android) opens the sealed dialog, the user picks an action, the phone posts it with its
/// device credential, and a snooze brings the next push.
@Suite("Callbacks on the emulated phone", .timeLimit(.minutes(2)))
struct CallbackPhoneTests {
    /// Seed 002's dialog with a one-second snooze, so the next push comes without moving a clock.
    static let request = """
        {"user_id":"u1","service_id":"svc-77","dialog":{"title":"Agent is available right now",\
        "text":"Are you ready?","actions":[{"id":"ready","label":"Yes, I'm ready to talk","kind":"connect"},\
        {"id":"later","label":"No, try again in a second","kind":"snooze","delay_seconds":1},\
        {"id":"cancel","label":"Cancel, my problem has been solved","kind":"cancel"}]}}
        """

    @Test("iOS: the NSE shows the dialog; snooze, a second push after the delay, ready connects")
    func snoozeThenReady() async throws {
        try await DeviceFlowTests.withPhone { phone, _, backend in
            try await phone.wait("both tokens") { DeviceFlowTests.started($0) }
            phone.callbacks.plan([.snooze, .ready])
            let scheduled: CallbackView = try await backend.request(.POST, "/v1/callbacks", Self.request, expect: 201)
            try await phone.wait("two answered dialogs") { phone in
                phone.callbacks.all.count == 2 && phone.callbacks.all.allSatisfy { $0.answer != nil }
            }
            let entries = phone.callbacks.all
            #expect(entries.map(\.content.sequence) == [1, 2])
            #expect(entries.map(\.content.serviceID) == ["svc-77", "svc-77"])
            #expect(entries.map { $0.answer?.state } == [.scheduled, .connected])
            #expect(entries.map { $0.answer?.action } == ["later", "ready"])
            let shown = phone.notifications.filter { $0.title == "Agent is available right now" }
            #expect(shown.count == 2 && shown.allSatisfy { $0.body == "Are you ready?" })
            let view: CallbackView = try await backend.request(
                .GET,
                "/v1/callbacks/\(scheduled.callbackID)",
                nil,
                expect: 200
            )
            #expect(view.state == .connected && view.pushes == 2)
            #expect(phone.diagnostics.isEmpty, "\(phone.diagnostics)")
        }
    }

    @Test("Android: the messaging service shows the dialog; cancel cancels")
    func androidCancel() async throws {
        var tweaks = DeviceFlowTests.Tweaks()
        tweaks.platform = .android
        try await DeviceFlowTests.withPhone(tweaks) { phone, _, backend in
            try await phone.wait("the FCM token") { DeviceFlowTests.started($0, voip: false) }
            phone.callbacks.plan([.cancel])
            let scheduled: CallbackView = try await backend.request(.POST, "/v1/callbacks", Self.request, expect: 201)
            try await phone.wait("the answered dialog") { $0.callbacks.all.first?.answer != nil }
            let entry = try #require(phone.callbacks.all.first)
            #expect(entry.content.callbackID == scheduled.callbackID && entry.content.dialog.actions.count == 3)
            #expect(entry.answer?.state == .cancelled)
            #expect(phone.notifications.last?.title == "Agent is available right now")
            #expect(phone.timeline.all.contains { $0.step == "fcm-service opened the callback's dialog" })
        }
    }

    @Test("a callback push presented as another push of it shows no dialog; the same push again is dropped")
    func replayRefused() async throws {
        try await DeviceFlowTests.withPhone { phone, _, backend in
            try await phone.wait("both tokens") { DeviceFlowTests.started($0) }
            _ = try await backend.request(.POST, "/v1/callbacks", Self.request, expect: 201) as CallbackView
            try await phone.wait("the dialog") { !$0.callbacks.all.isEmpty }
            let first = try #require(phone.callbacks.all.first)
            // The same sealed dialog presented as push 2: the additional data differs.
            let refused = "the sealed content did not open"
            let replayed = phone.serviceExtension.receiveCallback(
                payload: try Self.payload(of: phone, first.content.callbackID, push: 2),
                pushType: "alert"
            )
            #expect(replayed.callback == nil && replayed.diagnostic?.contains(refused) == true)
            // The first push again: a repeat, dropped.
            let again = phone.serviceExtension.receiveCallback(
                payload: try Self.payload(of: phone, first.content.callbackID, push: 1),
                pushType: "alert"
            )
            #expect(again.duplicate)
        }
    }

    @Test("herald extension decrypt opens a captured callback push: the dialog with its labels")
    func extensionHarness() async throws {
        try await DeviceFlowTests.withPhone { phone, _, backend in
            try await phone.wait("both tokens") { DeviceFlowTests.started($0) }
            _ = try await backend.request(.POST, "/v1/callbacks", Self.request, expect: 201) as CallbackView
            try await phone.wait("the dialog") { !$0.callbacks.all.isEmpty }
            let body = try #require(phone.callbacks.deliveredPayloads.first)
            let capture = try JSONSerialization.data(withJSONObject: ["payload": body, "push_type": "alert"])
            let outcome = try await ExtensionCommand.open(capture, store: phone.store, budget: .seconds(30))
            #expect(outcome.opened && outcome.diagnostic == nil)
            #expect(outcome.notification?.title == "Agent is available right now")
            #expect(outcome.notification?.body.contains("Yes, I'm ready to talk | No, try again in a second") == true)
            // Presented as another push of the callback, it does not open.
            let other = try JSONSerialization.data(withJSONObject: [
                "payload": try Self.payload(of: phone, phone.callbacks.all[0].content.callbackID, push: 5),
                "push_type": "alert",
            ])
            let refused = try await ExtensionCommand.open(other, store: phone.store, budget: .seconds(30))
            #expect(!refused.opened && refused.diagnostic?.contains("did not open") == true)
        }
    }

    /// The delivered callback push's body with its clear push number set to `push`.
    static func payload(of phone: EmulatedPhone, _ callbackID: String, push: Int) throws -> String {
        let delivered = try #require(phone.callbacks.deliveredPayloads.first)
        var object = try #require(try JSONSerialization.jsonObject(with: Data(delivered.utf8)) as? [String: Any])
        var herald = try #require(object["herald"] as? [String: Any])
        #expect(herald["callback_id"] as? String == callbackID)
        herald["push"] = push
        object["herald"] = herald
        return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }
}
