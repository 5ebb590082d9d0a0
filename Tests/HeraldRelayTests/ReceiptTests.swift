import Foundation
import HeraldCrypto
import HeraldRelayAPI
import HeraldStore
import Testing

/// The phones' receipts end to end (docs/receipts.md): a device tags a receipt with its session
/// keys, the relay records it once, shows it on the push, tells the backend and counts it; a
/// receipt another device made, one with a changed field and one sent again are refused or
/// change nothing.
@Suite("Receipts", .timeLimit(.minutes(2)))
struct ReceiptTests {
    static func post(
        _ harness: RelayHarness,
        _ phone: RelayHarness.Phone,
        _ receipt: DeliveryReceipt,
        taggedBy keys: SessionKeys? = nil,
        tag given: [UInt8]? = nil
    ) async throws -> RelayHarness.Reply {
        let tag = try given ?? receipt.tag(deviceKeys: try keys ?? phone.sessionKeys())
        let body = ReceiptRequest(
            pushID: receipt.pushID,
            stage: receipt.stage,
            deviceTime: receipt.deviceTime,
            failure: receipt.failure,
            keyID: receipt.keyID.hex,
            tag: ByteEncoding.base64URL(tag)
        )
        let json = String(decoding: try JSONEncoder().encode(body), as: UTF8.self)
        return try await harness.call(
            .POST,
            "/v1/devices/\(phone.deviceID)/receipts",
            auth: .bearer(phone.credential),
            body: json
        )
    }

    @Test(
        "shown is recorded once, on the push and by webhook; forged, misdirected and replayed receipts are refused and counted"
    )
    func receiptsEndToEnd() async throws {
        var setup = RelayHarness.Setup.recordingEvents
        setup.servesMetrics = true
        try await RelayHarness.with(setup) { harness in
            let phone = try await harness.phone(user: "rita")
            let other = try await harness.phone(user: "sam")
            let sent = try await harness.call(
                .POST,
                "/v1/messages",
                body:
                    #"{"to":"rita","from":{"id":"agent-7","name":"Dana"},"conversation":"c-1","text":"Your order shipped"}"#
            ).decode(IngestReceipt.self)
            let pushID = try #require(sent.pushes.first?.pushID)
            try await harness.push(pushID, reaches: .delivered)

            let keys = try phone.sessionKeys()
            let delivered = DeliveryReceipt(keyID: keys.keyID, pushID: pushID, stage: .delivered, deviceTime: 10)
            let shown = DeliveryReceipt(keyID: keys.keyID, pushID: pushID, stage: .shown, deviceTime: 20)
            let first = try await Self.post(harness, phone, shown)
            #expect(first.status == 201, "\(first.text)")
            let recorded = try first.decode(PushReceipt.self)
            #expect(recorded.pushID == pushID && recorded.stage == .shown && recorded.deviceTime == 20)
            #expect(try await Self.post(harness, phone, delivered).status == 201)

            // Sent again (a retry) with another time: 200 with the receipt recorded first.
            var retried = shown
            retried.deviceTime = 99
            let again = try await Self.post(harness, phone, retried)
            #expect(again.status == 200, "\(again.text)")
            #expect(try again.decode(PushReceipt.self) == recorded)

            let status = try await harness.call(.GET, "/v1/pushes/\(pushID)").decode(PushStatusView.self)
            #expect(status.deviceStage == .shown)
            #expect(status.receipts.map(\.stage) == [.delivered, .shown])
            #expect(status.receipts.map(\.deviceTime) == [10, 20])
            let listed = try await harness.call(.GET, "/v1/pushes?device=\(phone.deviceID)")
            let items = try #require(listed.json["pushes"] as? [[String: Any]])
            #expect(items.first { $0["push_id"] as? String == pushID }?["device_stage"] as? String == "shown")

            // A changed field under the same tag, another device's keys, and a push of another
            // device: refused.
            var tapped = shown
            tapped.stage = .tapped
            // The shown receipt's tag on a tapped receipt.
            let forgedTag = try await Self.post(harness, phone, tapped, tag: try shown.tag(deviceKeys: keys))
            #expect(forgedTag.status == 403, "\(forgedTag.text)")
            let strangersKeys = try other.sessionKeys()
            let withOtherKeys = try await Self.post(harness, phone, tapped, taggedBy: strangersKeys)
            #expect(withOtherKeys.status == 403)
            var misdirected = shown
            misdirected.keyID = strangersKeys.keyID
            #expect(try await Self.post(harness, other, misdirected).status == 404)
            var unknown = shown
            unknown.pushID = "no-such-push"
            #expect(try await Self.post(harness, phone, unknown).status == 404)
            #expect(
                try await harness.call(.GET, "/v1/pushes/\(pushID)").decode(PushStatusView.self).deviceStage == .shown
            )

            // The backend hears of the shown receipt once; of the delivered one not at all.
            let events = try await harness.events(orderingKey: "push:" + pushID)
                .filter { $0.type != .pushDelivered }
            #expect(events.map(\.type) == [.pushShown])
            let event = try #require(events.first)
            let data = try #require(try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any])
            #expect(Set(data.keys) == ["push_id", "device_id", "user_id", "stage", "device_time", "received_at"])
            #expect(data["device_id"] as? String == phone.deviceID && data["device_time"] as? Int == 20)

            let metrics = try await harness.call(.GET, "/metrics", auth: .none).text
            #expect(
                TestMetrics.value(
                    #"herald_relay_receipts_total{stage="shown",app="\#(RelayHarness.bundleID)",network="apns"}"#,
                    in: metrics
                ) == 1
            )
            #expect(TestMetrics.value(#"herald_relay_receipts_refused_total{reason="replayed"}"#, in: metrics) == 1)
            #expect(TestMetrics.value(#"herald_relay_receipts_refused_total{reason="bad_tag"}"#, in: metrics) == 2)
            #expect(TestMetrics.value(#"herald_relay_receipts_refused_total{reason="unknown_push"}"#, in: metrics) == 2)
        }
    }
}
