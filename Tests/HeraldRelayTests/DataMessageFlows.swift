import Foundation
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import Testing

/// What the flow tests of the data-message networks (FCM, Push Kit, Web Push) share: sending to a
/// user and waiting for the pushes, opening what a device received, and a dead token's course.
extension RelayHarness {
    /// Sends `text` to `user` and answers the receipt, after each push reached `state`.
    func send(to user: String, text: String, reaching state: PushState? = .delivered) async throws -> IngestReceipt {
        let reply = try await call(.POST, "/v1/messages", body: RelayFlowTests.message(to: user, text: text))
        #expect(reply.status == 202, "\(reply.text)")
        let receipt = try reply.decode(IngestReceipt.self)
        if let state { for sent in receipt.pushes { try await push(sent.pushID, reaches: state) } }
        return receipt
    }

    /// Rings `user` with a video call from Dana Agent and answers the receipt once its pushes were
    /// delivered.
    func ring(_ user: String, callID: String) async throws -> IngestReceipt {
        let body =
            #"{"to":"\#(user)","from":{"id":"agent-7","name":"Dana Agent"},"call_id":"\#(callID)","media":"video"}"#
        let reply = try await call(.POST, "/v1/calls", body: body)
        let receipt = try reply.decode(IngestReceipt.self)
        try #require(!receipt.pushes.isEmpty, "\(reply.text)")
        for sent in receipt.pushes { try await push(sent.pushID, reaches: .delivered) }
        return receipt
    }

    /// A device whose network no longer knows its token: the first message ends `token_dead` with
    /// a reason beginning `reason`, the token is dropped, the next message skips the device.
    func expectTokenDropped(_ phone: Phone, user: String, reason: String) async throws {
        try core.uninstall(deviceID: phone.sandboxDevice.deviceID)
        let first = try await send(to: user, text: "hi", reaching: nil)
        let status = try await push(try #require(first.pushes.first?.pushID), reaches: .tokenDead)
        #expect(status.reason?.hasPrefix(reason) == true, "\(status.reason ?? "none")")
        #expect(try await store.device(id: phone.deviceID)?.messagingToken == nil)
        let second = try await send(to: user, text: "again", reaching: nil)
        #expect(second.pushes.isEmpty)
        #expect(second.skipped.first?.reason == "token_dead: " + (status.reason ?? ""))
    }
}

extension AndroidFlowTests {
    /// The message sealed in a data message for `phone`; fails the test when it holds another kind.
    static func openMessage(_ data: [String: String], id: String, phone: RelayHarness.Phone) throws -> MessageContent {
        guard case .message(let content) = try open(data, kind: .message, pushID: id, phone: phone) else {
            throw RelayError.conflict.with(detail: "the envelope did not hold a message")
        }
        return content
    }

    /// The call sealed in a data message for `phone`; fails the test when it holds another kind.
    static func openCall(_ data: [String: String], id: String, phone: RelayHarness.Phone) throws -> CallContent {
        guard case .call(let content) = try open(data, kind: .call, pushID: id, phone: phone) else {
            throw RelayError.conflict.with(detail: "the envelope did not hold a call")
        }
        return content
    }

    /// A long text cut to fit the network's data budget, flagged, and a prefix of what was sent.
    static let longText = String(repeating: "Ünïcødé text 🙂 ", count: 600)

    static func expectCut(_ content: MessageContent) {
        #expect(content.truncated && longText.hasPrefix(content.text) && !content.text.isEmpty)
    }
}
