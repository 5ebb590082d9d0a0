import Foundation
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import Testing

/// A chat ends (by the backend, or idle), takes no event after, and goes with its transcript and
/// disconnects once retention has passed since its end.
@Suite("Chat lifecycle", .timeLimit(.minutes(2)))
struct ChatLifecycleTests {
    static let idle = Duration.seconds(600)
    static let retention: Int64 = 3600

    static func setup() -> RelayHarness.Setup {
        var setup = RelayHarness.Setup()
        setup.relay.chat.firstPushDelay = .seconds(3600)
        setup.relay.chat.idleEnd = idle
        setup.relay.messageRetention = .seconds(retention)
        return setup
    }

    static func post(_ harness: RelayHarness, _ conversation: String, _ text: String) async throws -> RelayHarness.Reply
    {
        try await harness.call(
            .POST,
            "/v1/chats/\(conversation)/events",
            body: #"{"to":"cust","type":"Message.Text","from":{"id":"agent-1","name":"Dana"},"text":"\#(text)"}"#
        )
    }

    @Test("POST /v1/chats/{conversation}/end ends a chat once: later events are refused with 409")
    func endByTheBackend() async throws {
        try await RelayHarness.with(Self.setup()) { harness in
            harness.clock.freeze()
            let phone = try await harness.phone(user: "cust")
            #expect(try await Self.post(harness, "chat-1", "Hello").status == 202)
            let started = harness.clock.now()

            #expect(try await harness.call(.POST, "/v1/chats/chat-1/end", auth: .none).status == 401)
            let device = try await harness.call(.POST, "/v1/chats/chat-1/end", auth: .bearer(phone.credential))
            #expect([401, 403].contains(device.status), "a device cannot end a chat: \(device.status)")
            let unknown = try await harness.call(.POST, "/v1/chats/no-such-chat/end")
            #expect(unknown.status == 404 && unknown.json["error"] as? String == "not_found", "\(unknown.text)")

            harness.clock.advance(by: .seconds(5))
            let ended = try await harness.call(.POST, "/v1/chats/chat-1/end")
            #expect(ended.status == 200, "\(ended.text)")
            let receipt = try ended.decode(ChatEndReceipt.self)
            #expect(receipt.conversation == "chat-1" && receipt.endedAt == started + 5_000)
            #expect(receipt.purgeAt == receipt.endedAt + Self.retention * 1000)

            let refused = try await Self.post(harness, "chat-1", "Anyone?")
            #expect(refused.status == 409 && refused.json["error"] as? String == "conflict", "\(refused.text)")
            #expect(try await harness.store.transcript(conversation: "chat-1", after: 0).count == 1)

            harness.clock.advance(by: .seconds(5))
            let again = try await harness.call(.POST, "/v1/chats/chat-1/end").decode(ChatEndReceipt.self)
            #expect(again.endedAt == receipt.endedAt, "the first end stays")
            // The customer's app still reads what was said until the purge.
            let transcript = try await harness.call(
                .GET,
                "/v1/chats/chat-1/transcript?after=0",
                auth: .bearer(phone.credential)
            )
            #expect(try transcript.decode(TranscriptView.self).events.map(\.text) == ["Hello"])
        }
    }

    @Test("a chat idle for chat.idle_end ends then: the next event is refused, an event in time keeps it open")
    func idleEnd() async throws {
        try await RelayHarness.with(Self.setup()) { harness in
            harness.clock.freeze()
            #expect(try await Self.post(harness, "chat-1", "Hello").status == 202)
            harness.clock.advance(by: Self.idle - .milliseconds(1))
            #expect(try await Self.post(harness, "chat-1", "Still there?").status == 202)
            let last = harness.clock.now()
            harness.clock.advance(by: Self.idle)
            let refused = try await Self.post(harness, "chat-1", "Hello again")
            #expect(refused.status == 409, "\(refused.text)")
            #expect(try await harness.store.chat(conversation: "chat-1")?.endedAt == last + 600_000)
        }
    }

    @Test("the janitor ends idle chats and deletes ended ones with their transcripts and disconnects after retention")
    func purgedAfterRetention() async throws {
        try await RelayHarness.with(Self.setup()) { harness in
            harness.clock.freeze()
            let phone = try await harness.phone(user: "cust")
            for conversation in ["chat-1", "chat-2"] {
                #expect(try await Self.post(harness, conversation, "Hello").status == 202)
                let reply = try await harness.call(
                    .POST,
                    "/v1/devices/\(phone.deviceID)/chats/\(conversation)/disconnect",
                    auth: .bearer(phone.credential),
                    body: #"{"transcript_position":1}"#
                )
                #expect(reply.status == 200)
            }
            // chat-1 ends now; chat-2 idles and ends `idle` later.
            #expect(try await harness.call(.POST, "/v1/chats/chat-1/end").status == 200)

            harness.clock.advance(by: .seconds(Self.retention) - .milliseconds(1))
            var purged = try await harness.relay.transcripts.purgeChats()
            #expect(purged.ended == 1 && purged.deleted == 0)
            #expect(try await harness.store.transcript(conversation: "chat-1", after: 0).count == 1)

            harness.clock.advance(by: .milliseconds(1))
            purged = try await harness.relay.transcripts.purgeChats()
            #expect(purged.ended == 0 && purged.deleted == 1)
            #expect(try await harness.store.transcript(conversation: "chat-1", after: 0) == [])
            #expect(try await harness.store.disconnects(conversation: "chat-1") == [])
            #expect(try await harness.store.chat(conversation: "chat-1") == nil)
            #expect(try await harness.store.transcript(conversation: "chat-2", after: 0).count == 1)
            #expect(try await harness.store.disconnects(conversation: "chat-2").count == 1)

            harness.clock.advance(by: Self.idle)
            #expect(try await harness.relay.transcripts.purgeChats().deleted == 1)
            #expect(try await harness.store.transcript(conversation: "chat-2", after: 0) == [])
            #expect(try await harness.store.disconnects(conversation: "chat-2") == [])
            let read = try await harness.call(
                .GET,
                "/v1/chats/chat-2/transcript?after=0",
                auth: .bearer(phone.credential)
            )
            #expect(try read.decode(TranscriptView.self).events.isEmpty)
        }
    }
}

/// The lifecycle's rules alone, without a store.
@Suite("Chat lifecycle machine")
struct ChatLifecycleMachineTests {
    static let idle: Int64 = 1_000

    @Test("no chat: an event starts one, an end is unknown")
    func none() {
        var machine = ChatLifecycle(nil, idleEnd: Self.idle)
        #expect(machine.handle(.end(at: 5)) == [.answerUnknown])
        #expect(machine.handle(.event(at: 5)) == [.append])
        #expect(machine.state == .open(lastEventAt: 5))
    }

    @Test("open: events in time append; the first one idleEnd after the last ends it then and is refused")
    func idleEnd() {
        var machine = ChatLifecycle(
            ChatRecord(conversation: "c", userID: "u", startedAt: 0, lastEventAt: 100),
            idleEnd: Self.idle
        )
        #expect(machine.handle(.event(at: 1_099)) == [.append])
        #expect(machine.handle(.event(at: 2_099)) == [.recordEnd(at: 2_099), .refuseEnded])
        #expect(machine.state == .ended(at: 2_099))
        #expect(machine.handle(.event(at: 2_100)) == [.refuseEnded])
    }

    @Test("an end is recorded now, or when the chat became idle if earlier; an ended chat answers its first end")
    func end() {
        let chat = ChatRecord(conversation: "c", userID: "u", startedAt: 0, lastEventAt: 100)
        var now = ChatLifecycle(chat, idleEnd: Self.idle)
        #expect(now.handle(.end(at: 500)) == [.recordEnd(at: 500), .answerEnded(at: 500)])
        #expect(now.handle(.end(at: 700)) == [.answerEnded(at: 500)])
        var late = ChatLifecycle(chat, idleEnd: Self.idle)
        #expect(late.handle(.end(at: 9_000)) == [.recordEnd(at: 1_100), .answerEnded(at: 1_100)])
        var ended = chat
        ended.endedAt = 300
        var stored = ChatLifecycle(ended, idleEnd: Self.idle)
        #expect(stored.handle(.end(at: 9_000)) == [.answerEnded(at: 300)])
        #expect(stored.handle(.event(at: 301)) == [.refuseEnded])
    }
}
