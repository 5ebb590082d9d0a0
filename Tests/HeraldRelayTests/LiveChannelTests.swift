import AsyncHTTPClient
import Foundation
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldSimulation
import HeraldTestSupport
import HummingbirdWSClient
import Logging
import NIOCore
import Testing

/// A test app's live channel: what arrives, and a way to send.
final class LiveClient: Sendable {
    /// The JSON text frames the relay sent.
    let received: AsyncStream<String>
    private let outgoing: AsyncStream<String>.Continuation
    private let task: Task<Void, any Error>

    convenience init(harness: RelayHarness, phone: RelayHarness.Phone, credential: String? = nil) {
        self.init(baseURL: harness.baseURL, deviceID: phone.deviceID, credential: credential ?? phone.credential)
    }

    /// A channel to the relay at `baseURL` (`http://host:port`).
    init(baseURL: String, deviceID: String, credential: String) {
        let url =
            baseURL.replacingOccurrences(of: "http://", with: "ws://")
            + "/v1/devices/\(deviceID)/live?credential=\(credential)"
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

@Suite("Live channel and broadcast", .timeLimit(.minutes(2)))
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
        try await eventually("the live channel") { harness.relay.live.isOpen(deviceID: phone.deviceID) }
        client.send(#"{"type":"presence","state":"active","conversation":"\#(conversation)"}"#)
        try await eventually("the presence on the channel") {
            harness.relay.live.isActive(deviceID: phone.deviceID, in: conversation)
        }
        return client
    }

    /// The relay's default acknowledgement timeout (docs/relay.md: 10 seconds).
    static let ackTimeout = Duration.seconds(10)

    /// Sends frames on the channel and returns once the relay has handled them: frames are
    /// handled in order, so a presence change sent after them is the signal.
    static func sendAndWait(
        _ frames: [String],
        on client: LiveClient,
        _ harness: RelayHarness,
        _ phone: RelayHarness.Phone,
        thenActiveIn conversation: String
    ) async throws {
        for frame in frames { client.send(frame) }
        client.send(#"{"type":"presence","state":"active","conversation":"\#(conversation)"}"#)
        try await eventually("the frames handled") {
            harness.relay.live.isActive(deviceID: phone.deviceID, in: conversation)
        }
    }

    @Test("an app on screen gets the message over its channel, and no push once it acknowledges")
    func liveSuppressesPush() async throws {
        try await RelayHarness.with { harness in
            harness.clock.freeze()
            let phone = try await harness.phone(user: "u1")
            let client = try await Self.activeChannel(harness, phone)
            var receipts: [IngestReceipt] = []
            for text in ["live hello", "never acknowledged"] {
                let receipt = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "u1", text: text))
                    .decode(IngestReceipt.self)
                #expect(receipt.pushes.isEmpty)
                #expect(receipt.skipped == [.init(deviceID: phone.deviceID, reason: "delivered_live")])
                receipts.append(receipt)
            }
            var iterator = client.received.makeAsyncIterator()
            let event = try #require(await LiveClient.next(&iterator))
            #expect(event["type"] as? String == "message" && event["text"] as? String == "live hello")
            #expect(event["message_id"] as? String == receipts[0].id)
            #expect(try #require(await LiveClient.next(&iterator))["message_id"] as? String == receipts[1].id)
            try await Self.sendAndWait(
                [#"{"type":"ack","message_id":"\#(receipts[0].id)"}"#],
                on: client,
                harness,
                phone,
                thenActiveIn: "c-9"
            )
            // The acknowledged message's timer is disarmed; the other's waits, asleep.
            try await eventually("the unacknowledged message's timer") {
                harness.relay.timers.armed == 1 && harness.clock.sleepers == 1
            }
            // The timeout passes: the unacknowledged message is pushed, the acknowledged one not.
            harness.clock.advance(by: Self.ackTimeout)
            try await eventually("the unacknowledged message's push") {
                !harness.accepted(token: phone.messagingToken).isEmpty
            }
            let pushed = try RelayFlowTests.heraldField(
                try #require(harness.accepted(token: phone.messagingToken).first).payload
            )
            #expect(pushed["message_id"] as? String == receipts[1].id)
            try await eventually("the push recorded") {
                try await harness.store.outboxCounts().byState == [.delivered: 1]
            }
            #expect(harness.accepted(token: phone.messagingToken).count == 1)
            client.close()
            await client.ended
            // Another conversation is not on screen: pushed.
            let other = LiveClient(harness: harness, phone: phone)
            defer { other.close() }
            try await eventually("the second channel") { harness.relay.live.isOpen(deviceID: phone.deviceID) }
            let elsewhere = try await harness.call(
                .POST,
                "/v1/messages",
                body: Self.message(to: "u1", conversation: "c-2", text: "elsewhere")
            ).decode(IngestReceipt.self)
            #expect(elsewhere.pushes.count == 1)
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
            try await eventually("the fallback push") { !harness.accepted(token: phone.messagingToken).isEmpty }
            let record = try #require(harness.accepted(token: phone.messagingToken).first)
            let herald = try RelayFlowTests.heraldField(record.payload)
            #expect(herald["message_id"] as? String == receipt.id)
            let message = try phone.openMessage(herald, pushID: receipt.id)
            #expect(message.text == "not acked")
            #expect(harness.accepted(token: phone.messagingToken).count == 1)
        }
    }

    @Test("no acknowledgement within the timeout, channel still open: the message is pushed then, not before")
    func ackTimeoutFallsBack() async throws {
        try await RelayHarness.with { harness in
            harness.clock.freeze()
            let phone = try await harness.phone(user: "u1")
            let client = try await Self.activeChannel(harness, phone)
            defer { client.close() }
            let receipt = try await harness.call(
                .POST,
                "/v1/messages",
                body: Self.message(to: "u1", text: "silent app")
            )
            .decode(IngestReceipt.self)
            #expect(receipt.skipped == [.init(deviceID: phone.deviceID, reason: "delivered_live")])
            try await eventually("the acknowledgement timer") { harness.clock.sleepers == 1 }
            // A millisecond short: the timer wakes, finds it early and sleeps again.
            harness.clock.advance(by: Self.ackTimeout - .milliseconds(1))
            try await eventually("the timer asleep again") { harness.clock.sleepers == 1 }
            #expect(try await harness.store.outboxCounts().byState.isEmpty)
            harness.clock.advance(by: .milliseconds(1))
            try await eventually("the fallback push") { !harness.accepted(token: phone.messagingToken).isEmpty }
            let pushed = try RelayFlowTests.heraldField(
                try #require(harness.accepted(token: phone.messagingToken).first).payload
            )
            #expect(pushed["message_id"] as? String == receipt.id)
        }
    }

    @Test("a second channel for the device replaces the first; an unacknowledged message is pushed once")
    func secondChannelReplacesFirst() async throws {
        try await RelayHarness.with { harness in
            harness.clock.freeze()
            let phone = try await harness.phone(user: "u1")
            let first = try await Self.activeChannel(harness, phone)
            defer { first.close() }
            let receipt = try await harness.call(
                .POST,
                "/v1/messages",
                body: Self.message(to: "u1", text: "in between")
            )
            .decode(IngestReceipt.self)
            var firstFrames = first.received.makeAsyncIterator()
            #expect(try #require(await LiveClient.next(&firstFrames))["message_id"] as? String == receipt.id)

            // The second channel: the relay ends the first (its stream finishes) and pushes what
            // the first left unacknowledged.
            let second = LiveClient(harness: harness, phone: phone)
            defer { second.close() }
            #expect(await LiveClient.next(&firstFrames) == nil)
            await first.ended
            try await eventually("the replaced channel's push") {
                !harness.accepted(token: phone.messagingToken).isEmpty
            }
            let pushed = try RelayFlowTests.heraldField(
                try #require(harness.accepted(token: phone.messagingToken).first).payload
            )
            #expect(pushed["message_id"] as? String == receipt.id)

            // The second channel is the device's now: it carries the next message.
            try await Self.sendAndWait([], on: second, harness, phone, thenActiveIn: "c-1")
            let next = try await harness.call(
                .POST,
                "/v1/messages",
                body: Self.message(to: "u1", text: "to the new one")
            )
            .decode(IngestReceipt.self)
            #expect(next.skipped == [.init(deviceID: phone.deviceID, reason: "delivered_live")])
            var secondFrames = second.received.makeAsyncIterator()
            #expect(try #require(await LiveClient.next(&secondFrames))["message_id"] as? String == next.id)
            try await Self.sendAndWait(
                [#"{"type":"ack","message_id":"\#(next.id)"}"#],
                on: second,
                harness,
                phone,
                thenActiveIn: "c-9"
            )
            // Neither acknowledgement timer is left: the first message was pushed when its
            // channel was replaced, the second acknowledged. The timeout passes all the same; a
            // control message to another conversation shows when the relay has handled it.
            try await eventually("both acknowledgement timers disarmed") { harness.relay.timers.armed == 0 }
            harness.clock.advance(by: Self.ackTimeout)
            let control = try await harness.call(
                .POST,
                "/v1/messages",
                body: Self.message(to: "u1", conversation: "c-2", text: "control")
            ).decode(IngestReceipt.self)
            try await harness.push(try #require(control.pushes.first).pushID, reaches: .delivered)
            let ids = try harness.accepted(token: phone.messagingToken).map {
                try RelayFlowTests.heraldField($0.payload)["message_id"] as? String
            }
            #expect(ids == [receipt.id, control.id])
            try await eventually("both pushes recorded") {
                try await harness.store.outboxCounts().byState == [.delivered: 2]
            }
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

    /// The status a WebSocket upgrade request gets, within `deadline` (a refusal that never
    /// came would look like "not open" too). Its own client: a refused upgrade ends the
    /// connection, which a pooled client would reuse.
    static func upgradeStatus(
        _ harness: RelayHarness,
        _ path: String,
        authorization: String? = nil,
        deadline: Duration = .seconds(10)
    ) async throws -> Int {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        var request = HTTPClientRequest(url: harness.baseURL + path)
        request.headers.add(contentsOf: [
            ("connection", "Upgrade"), ("upgrade", "websocket"), ("sec-websocket-version", "13"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ])
        if let authorization { request.headers.add(name: "authorization", value: authorization) }
        do {
            let status = try await client.execute(request, timeout: TimeAmount(deadline)).status.code
            try await client.shutdown()
            return Int(status)
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// The answer to a WebSocket upgrade request, read off the wire.
    static func upgradeAnswer(
        _ harness: RelayHarness,
        _ path: String,
        authorization: String? = nil
    ) async throws -> RawHTTPConnection.Answer {
        let connection = try await RawHTTPConnection.connect(port: harness.port)
        var request = "GET \(path) HTTP/1.1\r\nhost: relay\r\nconnection: Upgrade\r\nupgrade: websocket\r\n"
        request += "sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        if let authorization { request += "authorization: \(authorization)\r\n" }
        try await connection.send(request + "\r\n")
        let answer = try await connection.answer()
        await connection.close()
        return answer
    }

    @Test("a live channel needs the device's own credential: any other is 401 or 403 with the JSON error, at once")
    func liveNeedsCredential() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "u1")
            let other = try await harness.phone(user: "u2")
            let revoked = try await harness.phone(user: "u3")
            let gone = try await harness.call(.DELETE, "/v1/devices/\(revoked.deviceID)")
            try #require((200..<300).contains(gone.status), "revocation answered \(gone.status)")
            let path = "/v1/devices/\(phone.deviceID)/live"
            let refusals: [(path: String, authorization: String?, status: Int, error: String)] = [
                (path, nil, 401, "unauthorized"),
                (path + "?credential=not-a-credential", nil, 401, "unauthorized"),
                (path, "Bearer not-a-credential", 401, "unauthorized"),
                ("/v1/devices/\(revoked.deviceID)/live?credential=" + revoked.credential, nil, 401, "unauthorized"),
                (path + "?credential=" + other.credential, nil, 403, "forbidden"),
                (path, "Bearer " + other.credential, 403, "forbidden"),
                (path, "Bearer " + RelayHarness.apiKey, 403, "forbidden"),
                (path + "?credential=" + RelayHarness.apiKey, nil, 403, "forbidden"),
            ]
            for refusal in refusals {
                let answer = try await Self.upgradeAnswer(harness, refusal.path, authorization: refusal.authorization)
                let context = "\(refusal.path) \(refusal.authorization ?? "")"
                #expect(answer.status == refusal.status, "\(context)")
                #expect(answer.headers["content-type"] == "application/json", "\(context)")
                #expect(answer.json?["error"] as? String == refusal.error, "\(context)")
                #expect((answer.json?["reason"] as? String)?.isEmpty == false, "\(context)")
                if refusal.status == 401 { #expect(answer.headers["www-authenticate"] == "Bearer", "\(context)") }
            }
            // Without upgrade headers the route answers the same JSON itself.
            let plain = try await harness.call(.GET, path, auth: .none)
            #expect(plain.status == 401)
            // With the device's credential and no upgrade headers: 426, saying what the route is.
            let notUpgrade = try await harness.call(.GET, path, auth: .bearer(phone.credential))
            #expect(notUpgrade.status == 426)
            #expect(notUpgrade.json["error"] as? String == "upgrade_required")
            #expect(notUpgrade.headers.contains { $0.0 == "upgrade" && $0.1 == "websocket" })
            #expect(!harness.relay.live.isOpen(deviceID: phone.deviceID))
            // The same request with the device's own credential is upgraded: the probe can tell.
            #expect(try await Self.upgradeStatus(harness, path + "?credential=" + phone.credential) == 101)
        }
    }
}
