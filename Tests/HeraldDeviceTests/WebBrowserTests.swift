import AsyncHTTPClient
import Foundation
import HeraldSimulation
import Testing

@testable import HeraldCommands
@testable import HeraldDevice

/// The emulated phone as a browser (`--platform web`) against a real sandbox (its Web Push
/// service), relay and Web Push sender.
@Suite("Emulated browser, end to end", .timeLimit(.minutes(3)))
struct WebBrowserTests {
    /// A browser, once its session started with the subscription's endpoint.
    static func withBrowser(
        _ body: (EmulatedPhone, SimulationEndpoints, SimulatedBackend) async throws -> Void
    ) async throws {
        try await DeviceFlowTests.withPhone(.init(platform: .web)) { browser, endpoints, backend in
            try await browser.wait("the subscription") { DeviceFlowTests.started($0, messaging: true, voip: false) }
            try await body(browser, endpoints, backend)
        }
    }

    @Test("a message: the service worker decrypts the push, opens the envelope, shows sender and text; a tap")
    func messageShown() async throws {
        try await Self.withBrowser { phone, endpoints, backend in
            #expect(phone.store.tokens().messaging?.contains("/wp/") == true)
            // Back once the `shown` receipt was taken: the receipts are Android's.
            let pushID = try await DeviceFlowTests.sendShown("Your parcel left the depot", to: phone, backend)
            let shown = try #require(phone.notifications.first)
            #expect(shown.title == "Agent" && shown.body == "Your parcel left the depot" && phone.diagnostics.isEmpty)
            #expect(phone.receipts.filter { $0.pushID == pushID }.map(\.stage) == [.delivered, .opened, .shown])
            let steps = phone.timeline.all
            #expect(
                steps.contains { $0.from == "push-service" && $0.to == "service-worker" && $0.step == "push delivered" }
            )
            #expect(steps.contains { $0.step == "service worker opened the sealed content" })
            #expect(
                steps.contains {
                    $0.from == "service-worker" && $0.to == "notification" && $0.step == "notification shown"
                }
            )
            #expect(try await phone.tap(shown) == "Your parcel left the depot")

            // The push service saw ciphertext only, and never the subscription's auth secret.
            let response = try await backend.http.execute(
                HTTPClientRequest(url: endpoints.sandboxURL + "/sandbox/webpush/inspection"),
                timeout: .seconds(10)
            )
            let inspection = String(
                decoding: try await response.body.collect(upTo: 1 << 20).readableBytesView,
                as: UTF8.self
            )
            let auth = try phone.subscription(endpoint: "https://x.invalid/wp/1").keys.auth
            #expect(inspection.contains("aes128gcm") || inspection.contains("body"))
            #expect(!inspection.contains("Agent") && !inspection.contains("parcel") && !inspection.contains(auth))
        }
    }

    @Test("a call: the service worker shows it as a notification that rings; the user answers")
    func callRings() async throws {
        try await Self.withBrowser { phone, _, backend in
            let call = #"{"to":"u1","from":{"id":"a","name":"Dana"},"call_id":"call-5","media":"audio"}"#
            #expect(try await backend.post("/v1/calls", call).pushes.count == 1)
            try await phone.wait("the call notification") { phone in
                phone.callKit.calls.contains {
                    $0.callID == "call-5" && $0.callerName == "Dana" && $0.state == .ringing
                }
            }
            #expect(phone.timeline.all.contains { $0.from == "service-worker" && $0.to == "call-notification" })
            #expect(try await phone.answerCall("call-5"))
            #expect(phone.callKit.calls.map(\.state) == [.answered])
        }
    }

    @Test("a web_push frame: parsed with its base64 body; one without a body is not a push")
    func frames() throws {
        let frame =
            #"{"type":"web_push","message":{"id":"m1","endpoint":"https://127.0.0.1:2194/wp/x","body":"AAEC","ttl":60,"urgency":"high","topic":"t1","sent_at":1}}"#
        #expect(
            SandboxLink.parse(frame)
                == .webPush(
                    DeliveredWebPush(
                        id: "m1",
                        endpoint: "https://127.0.0.1:2194/wp/x",
                        body: [0, 1, 2],
                        ttl: 60,
                        urgency: "high",
                        topic: "t1"
                    )
                )
        )
        #expect(SandboxLink.parse(#"{"type":"web_push","message":{"id":"m1"}}"#) == nil)
        #expect(SandboxLink.parse(#"{"type":"web_push","message":{"id":"m1","body":"%%"}}"#) == nil)
    }

    @Test("herald simulate web: a late subscription, three Web Push messages decrypted and opened, a tap")
    func simulateWeb() async throws {
        let events = try await SimulateLivesTests.play(["web"])
        #expect(events.contains { $0.step == "push subscription received" })
        #expect(events.contains { $0.step == "application server key fetched" })
        #expect(!events.contains { $0.step.contains("VoIP") })
        let pushes = events.filter { $0.step == "push delivered" }
        #expect(pushes.count == 3 && pushes.allSatisfy { $0.pushType == "webpush" && $0.from == "push-service" })
        #expect(events.filter { $0.step == "service worker opened the sealed content" }.count == 3)
        let shown = events.filter { $0.step == "notification shown" }
        #expect(
            shown.count == 3
                && shown.allSatisfy { $0.from == "service-worker" && $0.userSees?.contains("Dana") == true }
        )
        #expect(events.filter { $0.step == "push accepted by the push service" }.count == 3)
        #expect(events.contains { $0.step == "conversation opened" })
    }
}
