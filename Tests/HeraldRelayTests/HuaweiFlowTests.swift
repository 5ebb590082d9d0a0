import Foundation
import HeraldCrypto
import HeraldPush
import HeraldRelay
import HeraldRelayAPI
import HeraldSandbox
import HeraldTestSupport
import Testing

/// Huawei devices: activation with a Push Kit token → message / call → the data message the
/// sandbox's Push Kit received, opened with the device's keys.
@Suite("Relay flows on Huawei devices (Push Kit)", .timeLimit(.minutes(2)))
struct HuaweiFlowTests {
    @Test("a message becomes a HIGH data message sealed for the device; Huawei sees only ids and the envelope")
    func messageBecomesDataMessage() async throws {
        try await RelayHarness.with { harness in
            let huawei = try await harness.androidPhone(user: "alice", huawei: true)
            let secret = "Your refund of 42 EUR was approved"
            let reply = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "alice", text: secret)
            )
            #expect(reply.status == 202)
            let receipt = try reply.decode(IngestReceipt.self)
            try await harness.push(try #require(receipt.pushes.first?.pushID), reaches: .delivered)
            let (record, data) = try #require(harness.acceptedHMS(token: huawei.messagingToken).first)
            #expect(record.urgency == "HIGH" && record.tokens == [huawei.messagingToken])
            #expect(data["kind"] == "message" && data["message_id"] == receipt.id && data["v"] == "1")
            #expect(!(record.data ?? "").contains("refund") && !(record.data ?? "").contains("Dana"))
            #expect((record.data ?? "").utf8.count <= HMSPayload.maxData)
            guard
                case .message(let content) = try AndroidFlowTests.open(
                    data,
                    kind: .message,
                    pushID: receipt.id,
                    phone: huawei
                )
            else {
                Issue.record("the envelope did not hold a message")
                return
            }
            #expect(content.text == secret && content.senderName == "Dana Agent")
        }
    }

    @Test("a long text is cut so Push Kit's data string stays within 4,096 bytes, and the cut is flagged")
    func longTextFits() async throws {
        try await RelayHarness.with { harness in
            let huawei = try await harness.androidPhone(user: "carol", huawei: true)
            let text = String(repeating: "Ünïcødé text 🙂 ", count: 600)
            let reply = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "carol", text: text)
            )
            let receipt = try reply.decode(IngestReceipt.self)
            try await harness.push(try #require(receipt.pushes.first?.pushID), reaches: .delivered)
            let (record, data) = try #require(harness.acceptedHMS(token: huawei.messagingToken).first)
            let size = (record.data ?? "").utf8.count
            #expect(size <= HMSPayload.maxData && size > 3800)
            guard
                case .message(let content) = try AndroidFlowTests.open(
                    data,
                    kind: .message,
                    pushID: receipt.id,
                    phone: huawei
                )
            else {
                Issue.record("the envelope did not hold a message")
                return
            }
            #expect(content.truncated && text.hasPrefix(content.text))
        }
    }

    @Test("an invalid token: the push is token_dead, the token dropped, the next message skips the device")
    func deadTokenIsDropped() async throws {
        try await RelayHarness.with { harness in
            let huawei = try await harness.androidPhone(user: "dave", huawei: true)
            try harness.core.uninstall(deviceID: huawei.sandboxDevice.deviceID)
            let first = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "dave", text: "hi")
            )
            let status = try await harness.push(
                try #require(try first.decode(IngestReceipt.self).pushes.first?.pushID),
                reaches: .tokenDead
            )
            #expect(status.reason?.hasPrefix("80300007") == true, "\(status.reason ?? "none")")
            let second = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "dave", text: "again")
            )
            let receipt = try second.decode(IngestReceipt.self)
            #expect(receipt.pushes.isEmpty && receipt.skipped.first?.reason.hasPrefix("token_dead") == true)
        }
    }
}
