import Foundation
import HeraldCrypto
import HeraldPush
import HeraldRelay
import HeraldRelayAPI
import HeraldSandbox
import HeraldSimulation
import HeraldTestSupport
import Testing

/// Huawei devices: activation with a Push Kit token → message → the data message the sandbox's
/// Push Kit received, opened with the device's keys.
@Suite("Relay flows on Huawei devices (Push Kit)", .timeLimit(.minutes(2)))
struct HuaweiFlowTests {
    @Test("a message becomes a HIGH data message sealed for the device; Huawei sees only ids and the envelope")
    func messageBecomesDataMessage() async throws {
        try await RelayHarness.with { harness in
            let huawei = try await harness.androidPhone(user: "alice", huawei: true)
            let secret = "Your refund of 42 EUR was approved"
            let receipt = try await harness.send(to: "alice", text: secret)
            let (record, data) = try #require(harness.acceptedHMS(token: huawei.messagingToken).first)
            #expect(record.urgency == "HIGH" && record.tokens == [huawei.messagingToken])
            #expect(data["kind"] == "message" && data["message_id"] == receipt.id && data["v"] == "1")
            #expect(!(record.data ?? "").contains("refund") && !(record.data ?? "").contains("Dana"))
            let content = try AndroidFlowTests.openMessage(data, id: receipt.id, phone: huawei)
            #expect(content.text == secret && content.senderName == "Dana Agent")
        }
    }

    @Test("a long text is cut so Push Kit's data string stays within 4,096 bytes, and the cut is flagged")
    func longTextFits() async throws {
        try await RelayHarness.with { harness in
            let huawei = try await harness.androidPhone(user: "carol", huawei: true)
            let receipt = try await harness.send(to: "carol", text: AndroidFlowTests.longText)
            let (record, data) = try #require(harness.acceptedHMS(token: huawei.messagingToken).first)
            #expect((3800...HMSPayload.maxData).contains((record.data ?? "").utf8.count))
            AndroidFlowTests.expectCut(try AndroidFlowTests.openMessage(data, id: receipt.id, phone: huawei))
        }
    }

    @Test("several Huawei apps: each package's pushes go out as its own app, the others' as the default")
    func fleetOfApps() async throws {
        var setup = RelayHarness.Setup()
        setup.moreHuaweiApps = ["com.example.other": "100000077"]
        try await RelayHarness.with(setup) { harness in
            let saved = try await harness.call(.PUT, "/v1/apps/com.example.other", body: #"{"team_id":"TEAM123456"}"#)
            #expect(saved.status == 200, "\(saved.text)")
            let other = try await harness.androidPhone(
                user: "otto",
                bundleID: "com.example.other",
                huawei: true,
                huaweiApp: "100000077"
            )
            let chat = try await harness.androidPhone(user: "otto", huawei: true)
            _ = try await harness.send(to: "otto", text: "hi")
            let sentAs = { (phone: RelayHarness.Phone) in
                harness.acceptedHMS(token: phone.messagingToken).map { $0.0.appID }
            }
            #expect(sentAs(other) == ["100000077"] && sentAs(chat) == [HeraldTestStack.HMS().appID])
        }
    }

    @Test("an invalid token: the push is token_dead, the token dropped, the next message skips the device")
    func deadTokenIsDropped() async throws {
        try await RelayHarness.with { harness in
            let huawei = try await harness.androidPhone(user: "dave", huawei: true)
            try await harness.expectTokenDropped(huawei, user: "dave", reason: "80300007")
        }
    }
}
