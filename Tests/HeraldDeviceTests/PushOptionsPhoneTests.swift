import Foundation
import HeraldDevice
import Testing

@testable import HeraldCommands

/// The sealed push options as the phone sees them (docs/relay.md, "Push options").
@Suite("Push options on the phone", .timeLimit(.minutes(3)))
struct PushOptionsPhoneTests {
    @Test("the extension shows the sealed per-message title and keeps the sealed data")
    func sealedTitleAndData() async throws {
        try await DeviceFlowTests.withPhone { phone, _, backend in
            try await phone.wait("both tokens") { DeviceFlowTests.started($0) }
            _ = try await backend.post(
                "/v1/messages",
                #"""
                {"to":"u1","from":{"id":"a","name":"Agent"},"conversation":"c","text":"Your refund is approved",
                 "title":"Refund update","data":{"order":"1001"},"priority":10,"badge":4,
                 "public_data":{"screen":"chat"}}
                """#
            )
            try await phone.wait("the notification") { !$0.notifications.isEmpty }
            let shown = try #require(phone.notifications.first)
            #expect(shown.title == "Refund update")
            #expect(shown.body == "Your refund is approved")
            #expect(shown.data == ["order": "1001"])
            #expect(!shown.fetchOnTap)
        }
    }
}
