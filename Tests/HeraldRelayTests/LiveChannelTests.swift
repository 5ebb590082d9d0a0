import Foundation
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HummingbirdWSClient
import Logging
import Testing

/// A test app's live channel: what arrives, and a way to send.
final class LiveClient: Sendable {
    /// The JSON text frames the relay sent.
    let received: AsyncStream<String>
    private let outgoing: AsyncStream<String>.Continuation
    private let task: Task<Void, any Error>

    init(harness: RelayHarness, phone: RelayHarness.Phone, credential: String? = nil) {
        let url =
            harness.baseURL.replacingOccurrences(of: "http://", with: "ws://")
            + "/v1/devices/\(phone.deviceID)/live?credential=\(credential ?? phone.credential)"
        let (received, receiving) = AsyncStream.makeStream(of: String.self)
        let (outgoingStream, outgoing) = AsyncStream.makeStream(of: String.self)
        self.received = received
        self.outgoing = outgoing
        task = Task {
            defer { receiving.finish() }
            try await WebSocketClient.connect(url: url, logger: Logger(label: "test.live")) { inbound, outbound, _ in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for try await message in inbound.messages(maxSize: 1 << 20) {
                            guard case .text(let text) = message else { continue }
                            receiving.yield(text)
                        }
                    }
                    group.addTask {
                        for await text in outgoingStream { try await outbound.write(.text(text)) }
                    }
                    try await group.next()
                    group.cancelAll()
                }
            }
        }
    }

    func send(_ text: String) { outgoing.yield(text) }

    func close() {
        outgoing.finish()
        task.cancel()
    }

    var ended: Void { get async { _ = await task.result } }

    /// The next frame, decoded.
    static func next(_ iterator: inout AsyncStream<String>.Iterator) async -> [String: Any]? {
        guard let text = await iterator.next() else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    }
}

@Suite("Live channel and broadcast")
struct LiveChannelTests {
    static func message(to user: String, conversation: String = "c-1", text: String) -> String {
        #"{"to":"\#(user)","from":{"id":"agent-7","name":"Dana"},"conversation":"\#(conversation)","text":"\#(text)"}"#
    }

    /// Opens a live channel, says the app is active in `conversation`, and waits until the relay knows.
    static func activeChannel(
        _ harness: RelayHarness,
        _ phone: RelayHarness.Phone,
        conversation: String = "c-1"
    )
        async throws -> LiveClient
    {
        let client = LiveClient(harness: harness, phone: phone)
        try await harness.eventually("the live channel") { harness.relay.live.isOpen(deviceID: phone.deviceID) }
        client.send(#"{"type":"presence","state":"active","conversation":"\#(conversation)"}"#)
        try await harness.eventually("the presence on the channel") {
            harness.relay.live.isActive(deviceID: phone.deviceID, in: conversation)
        }
        return client
    }

    @Test("an app on screen gets the message over its channel, and no push")
    func liveSuppressesPush() async throws {
        var setup = RelayHarness.Setup()
        setup.liveAckTimeout = .milliseconds(300)
        try await RelayHarness.with(setup) { harness in
            let phone = try await harness.phone(user: "u1")
            let client = try await Self.activeChannel(harness, phone)
            let receipt = try await harness.call(
                .POST,
                "/v1/messages",
                body: Self.message(to: "u1", text: "live hello")
            )
            .decode(IngestReceipt.self)
            #expect(receipt.pushes.isEmpty)
            #expect(receipt.skipped == [.init(deviceID: phone.deviceID, reason: "delivered_live")])
            var iterator = client.received.makeAsyncIterator()
            let event = try #require(await LiveClient.next(&iterator))
            #expect(event["type"] as? String == "message" && event["text"] as? String == "live hello")
            #expect(event["message_id"] as? String == receipt.id)
            client.send(#"{"type":"ack","message_id":"\#(receipt.id)"}"#)
            // Absence is what is under test: wait past the acknowledgement timeout.
            try await Task.sleep(for: .milliseconds(700))
            #expect(try await harness.store.outboxCounts().byState.isEmpty)
            #expect(harness.accepted(token: phone.messagingToken).isEmpty)
            client.close()
            await client.ended
            // Another conversation is not on screen: pushed.
            let other = LiveClient(harness: harness, phone: phone)
            defer { other.close() }
            try await harness.eventually("the second channel") { harness.relay.live.isOpen(deviceID: phone.deviceID) }
            let pushed = try await harness.call(
                .POST,
                "/v1/messages",
                body: Self.message(to: "u1", conversation: "c-2", text: "elsewhere")
            ).decode(IngestReceipt.self)
            #expect(pushed.pushes.count == 1)
        }
    }

    @Test("a channel that drops before the acknowledgement: the message is pushed, once")
    func droppedChannelFallsBack() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "u1")
            let client = try await Self.activeChannel(harness, phone)
            let receipt = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "u1", text: "not acked"))
                .decode(IngestReceipt.self)
            var iterator = client.received.makeAsyncIterator()
            #expect(try #require(await LiveClient.next(&iterator))["message_id"] as? String == receipt.id)
            client.close()
            await client.ended
            try await harness.eventually("the fallback push") { !harness.accepted(token: phone.messagingToken).isEmpty }
            let record = try #require(harness.accepted(token: phone.messagingToken).first)
            let herald = try RelayFlowTests.heraldField(record.payload)
            #expect(herald["message_id"] as? String == receipt.id)
            let envelope = try Envelope(text: try #require(herald["sealed"] as? String))
            let content = try EnvelopeOpener(sessionKeys: [try phone.sessionKeys()])
                .openContent(envelope, context: .init(kind: .message, pushID: receipt.id, deviceID: phone.deviceID))
            guard case .message(let message) = content else {
                Issue.record("not a message")
                return
            }
            #expect(message.text == "not acked")
            #expect(harness.accepted(token: phone.messagingToken).count == 1)
        }
    }

    @Test("no acknowledgement in time, channel still open: the message is pushed")
    func ackTimeoutFallsBack() async throws {
        var setup = RelayHarness.Setup()
        setup.liveAckTimeout = .milliseconds(200)
        try await RelayHarness.with(setup) { harness in
            let phone = try await harness.phone(user: "u1")
            let client = try await Self.activeChannel(harness, phone)
            defer { client.close() }
            _ = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "u1", text: "silent app"))
            try await harness.eventually("the fallback push") { !harness.accepted(token: phone.messagingToken).isEmpty }
        }
    }

    @Test("a broadcast reaches every member's every device exactly once, live or by push")
    func broadcast() async throws {
        try await RelayHarness.with { harness in
            let live = try await harness.phone(user: "ann")
            let bobPhone = try await harness.phone(user: "bob")
            let bobTablet = try await harness.phone(user: "bob")
            let cid = try await harness.phone(user: "cid")
            let client = try await Self.activeChannel(harness, live, conversation: "quiz-1")
            defer { client.close() }
            let reply = try await harness.call(
                .POST,
                "/v1/broadcasts",
                body:
                    #"{"to":["ann","bob","cid","bob"],"from":{"id":"quiz","name":"Quiz"},"conversation":"quiz-1","text":"The session started","idempotency_key":"quiz-1-start"}"#
            )
            #expect(reply.status == 202, "\(reply.text)")
            let receipt = try reply.decode(BroadcastReceipt.self)
            #expect(receipt.members.map(\.user) == ["ann", "bob", "cid"])
            let pushes = receipt.members.flatMap(\.receipt.pushes)
            #expect(Set(pushes.map(\.deviceID)) == [bobPhone.deviceID, bobTablet.deviceID, cid.deviceID])
            #expect(receipt.members[0].receipt.skipped == [.init(deviceID: live.deviceID, reason: "delivered_live")])
            for push in pushes { try await harness.push(push.pushID, reaches: .delivered) }
            for phone in [bobPhone, bobTablet, cid] {
                #expect(harness.accepted(token: phone.messagingToken).count == 1)
            }
            var iterator = client.received.makeAsyncIterator()
            #expect(try #require(await LiveClient.next(&iterator))["text"] as? String == "The session started")
            // The same broadcast again makes nothing new.
            let again = try await harness.call(
                .POST,
                "/v1/broadcasts",
                body:
                    #"{"to":["ann","bob","cid"],"from":{"id":"quiz","name":"Quiz"},"conversation":"quiz-1","text":"The session started","idempotency_key":"quiz-1-start"}"#
            ).decode(BroadcastReceipt.self)
            #expect(again.members.allSatisfy { $0.receipt.duplicate })
            let empty = try await harness.call(
                .POST,
                "/v1/broadcasts",
                body: #"{"to":[],"from":{"id":"q","name":"Q"},"conversation":"c","text":"x"}"#
            )
            #expect(empty.status == 400 && empty.json["field"] as? String == "to")
        }
    }

    @Test("a live channel needs the device's own credential")
    func liveNeedsCredential() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "u1")
            let other = try await harness.phone(user: "u2")
            let client = LiveClient(harness: harness, phone: phone, credential: other.credential)
            await client.ended
            #expect(!harness.relay.live.isOpen(deviceID: phone.deviceID))
        }
    }
}
