import Foundation
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldTestSupport
import Logging
import Testing

/// Seed 001's chat background semantics: a delayed first push, immediate later ones, no push
/// when the app returns in time, filtered event types, resync.
@Suite("Chat background semantics", .timeLimit(.minutes(2)))
struct ChatTests {
    static func setup(delay: Duration) -> RelayHarness.Setup {
        var setup = RelayHarness.Setup()
        setup.relay.chat.firstPushDelay = delay
        return setup
    }

    static func event(_ type: String = "Message.Text", text: String? = nil, agent: Bool = true) -> String {
        let text = text.map { #","text":"\#($0)""# } ?? ""
        return #"{"to":"cust","type":"\#(type)","from":{"id":"agent-1","name":"Dana"}\#(text),"from_agent":\#(agent)}"#
    }

    static func disconnect(_ harness: RelayHarness, _ phone: RelayHarness.Phone, at position: Int) async throws {
        let reply = try await harness.call(
            .POST,
            "/v1/devices/\(phone.deviceID)/chats/chat-1/disconnect",
            auth: .bearer(phone.credential),
            body: #"{"transcript_position":\#(position)}"#
        )
        #expect(reply.status == 200, "\(reply.text)")
    }

    /// The text sealed in a push the sandbox accepted.
    static func sealedText(_ harness: RelayHarness, _ phone: RelayHarness.Phone, _ index: Int = 0) throws -> String {
        let record = try #require(harness.accepted(token: phone.messagingToken).dropFirst(index).first)
        let herald = try RelayFlowTests.heraldField(record.payload)
        let envelope = try Envelope(text: try #require(herald["sealed"] as? String))
        let messageID = try #require(herald["message_id"] as? String)
        let content = try EnvelopeOpener(sessionKeys: [try phone.sessionKeys()])
            .openContent(envelope, context: .init(kind: .message, pushID: messageID, deviceID: phone.deviceID))
        guard case .message(let message) = content else { return "" }
        return message.text
    }

    /// Long enough that no real-time window matters: the delay ends when a test moves the clock.
    static let delay = Duration.seconds(3600)

    @Test("the first agent event after a disconnect pushes after the delay, with the lines since; later ones at once")
    func delayedThenImmediate() async throws {
        try await RelayHarness.with(Self.setup(delay: Self.delay)) { harness in
            harness.clock.freeze()
            let phone = try await harness.phone(user: "cust")
            _ = try await harness.call(.POST, "/v1/chats/chat-1/events", body: Self.event(text: "Welcome"))
            try await Self.disconnect(harness, phone, at: 1)
            let first = try await harness.call(.POST, "/v1/chats/chat-1/events", body: Self.event(text: "Hello"))
                .decode(ChatEventReceipt.self)
            #expect(first.position == 2 && first.pushes.isEmpty && first.scheduled == [phone.deviceID])
            let second = try await harness.call(
                .POST,
                "/v1/chats/chat-1/events",
                body: Self.event(text: "Are you there?")
            )
            .decode(ChatEventReceipt.self)
            #expect(second.pushes.isEmpty && second.scheduled == [phone.deviceID])
            // One timer for the device and chat; the relay's timers asleep until its deadline.
            try await eventually("the first push's timer") {
                harness.relay.timers.armed == 1 && harness.clock.sleepers == 1
            }

            // A millisecond short of the delay: the timer wakes, finds it early and sleeps again.
            harness.clock.advance(by: Self.delay - .milliseconds(1))
            try await eventually("the timer asleep again") { harness.clock.sleepers == 1 }
            #expect(try await harness.store.outboxCounts().byState.isEmpty)
            #expect(harness.accepted(token: phone.messagingToken).isEmpty)

            harness.clock.advance(by: .milliseconds(1))
            try await eventually("the delayed push") { !harness.accepted(token: phone.messagingToken).isEmpty }
            // The notification's title is the sender: the lines do not repeat it.
            #expect(try Self.sealedText(harness, phone) == "Hello\nAre you there?")
            let record = try #require(harness.accepted(token: phone.messagingToken).first)
            #expect(!record.payload.contains("Hello"))
            // After the first push, agent events push at once.
            let third = try await harness.call(.POST, "/v1/chats/chat-1/events", body: Self.event(text: "Still here"))
                .decode(ChatEventReceipt.self)
            #expect(third.pushes.count == 1 && third.scheduled.isEmpty)
            try await harness.push(try #require(third.pushes.first).pushID, reaches: .delivered)
            #expect(harness.accepted(token: phone.messagingToken).count == 2)
        }
    }

    @Test("an app that returns before the delay gets no push, and the events it missed")
    func returnBeforeDelay() async throws {
        try await RelayHarness.with(Self.setup(delay: Self.delay)) { harness in
            harness.clock.freeze()
            let phone = try await harness.phone(user: "cust")
            // The customer's tablet stays away: its push shows when the delay's end was handled.
            let tablet = try await harness.phone(user: "cust")
            try await Self.disconnect(harness, phone, at: 0)
            try await Self.disconnect(harness, tablet, at: 0)
            let receipt = try await harness.call(.POST, "/v1/chats/chat-1/events", body: Self.event(text: "Hello"))
                .decode(ChatEventReceipt.self)
            #expect(Set(receipt.scheduled) == [phone.deviceID, tablet.deviceID])
            try await eventually("both timers") {
                harness.relay.timers.armed == 2 && harness.clock.sleepers == 1
            }
            let back = try await harness.call(
                .POST,
                "/v1/devices/\(phone.deviceID)/chats/chat-1/connect",
                auth: .bearer(phone.credential)
            )
            #expect(back.status == 200)
            let resync = try back.decode(TranscriptView.self)
            #expect(resync.events.map(\.text) == ["Hello"])
            // The phone's timer is cancelled, not merely ignored later.
            #expect(harness.relay.timers.armed == 1)

            harness.clock.advance(by: Self.delay)
            try await eventually("the tablet's push") {
                !harness.accepted(token: tablet.messagingToken).isEmpty
            }
            #expect(harness.accepted(token: phone.messagingToken).isEmpty)
            try await eventually("the tablet's push recorded") {
                try await harness.store.outboxCounts().byState == [.delivered: 1]
            }
        }
    }

    @Test("typing notices and the customer's own events never push; a zero delay pushes at once")
    func filteredAndZeroDelay() async throws {
        try await RelayHarness.with(Self.setup(delay: .zero)) { harness in
            let phone = try await harness.phone(user: "cust")
            try await Self.disconnect(harness, phone, at: 0)
            for body in [
                Self.event("Notice.TypingStarted"), Self.event("Notice.TypingStopped"),
                Self.event(text: "mine", agent: false),
            ] {
                let receipt = try await harness.call(.POST, "/v1/chats/chat-1/events", body: body).decode(
                    ChatEventReceipt.self
                )
                #expect(receipt.filtered && receipt.pushes.isEmpty && receipt.scheduled.isEmpty)
            }
            let joined = try await harness.call(.POST, "/v1/chats/chat-1/events", body: Self.event("Notice.Joined"))
                .decode(ChatEventReceipt.self)
            #expect(!joined.filtered && joined.pushes.count == 1)
            try await harness.push(try #require(joined.pushes.first).pushID, reaches: .delivered)
            #expect(try Self.sealedText(harness, phone) == "Notice.Joined")
        }
    }

    @Test("a push with lines of two agents names each line's author; the sender is the last one")
    func twoAuthors() async throws {
        try await RelayHarness.with(Self.setup(delay: .zero)) { harness in
            let phone = try await harness.phone(user: "cust")
            try await Self.disconnect(harness, phone, at: 0)
            let first = try await harness.call(.POST, "/v1/chats/chat-1/events", body: Self.event(text: "Hello"))
                .decode(ChatEventReceipt.self)
            try await harness.push(try #require(first.pushes.first).pushID, reaches: .delivered)
            let sam = #"{"to":"cust","type":"Message.Text","from":{"id":"agent-2","name":"Sam"},"text":"I take over"}"#
            let second = try await harness.call(.POST, "/v1/chats/chat-1/events", body: sam)
                .decode(ChatEventReceipt.self)
            try await harness.push(try #require(second.pushes.first).pushID, reaches: .delivered)
            #expect(try Self.sealedText(harness, phone, 0) == "Hello")
            #expect(try Self.sealedText(harness, phone, 1) == "Dana: Hello\nSam: I take over")
        }
    }

    @Test("resync returns every event after a position, to the chat's customer only")
    func resync() async throws {
        try await RelayHarness.with(Self.setup(delay: .seconds(30))) { harness in
            let phone = try await harness.phone(user: "cust")
            let stranger = try await harness.phone(user: "someone")
            for text in ["one", "two", "three"] {
                _ = try await harness.call(.POST, "/v1/chats/chat-1/events", body: Self.event(text: text))
            }
            let after = try await harness.call(
                .GET,
                "/v1/chats/chat-1/transcript?after=1",
                auth: .bearer(phone.credential)
            )
            #expect(after.status == 200)
            let view = try after.decode(TranscriptView.self)
            #expect(view.events.map(\.position) == [2, 3] && view.events.map(\.text) == ["two", "three"])
            #expect(view.events.allSatisfy { $0.from.name == "Dana" && $0.fromAgent })
            let foreign = try await harness.call(
                .GET,
                "/v1/chats/chat-1/transcript?after=0",
                auth: .bearer(stranger.credential)
            )
            #expect(foreign.status == 403)
            let bad = try await harness.call(
                .GET,
                "/v1/chats/chat-1/transcript?after=-4",
                auth: .bearer(phone.credential)
            )
            #expect(bad.status == 400 && bad.json["field"] as? String == "after")
            let empty = try await harness.call(.POST, "/v1/chats/chat-1/events", body: Self.event(text: nil))
            #expect(empty.status == 400 && empty.json["field"] as? String == "text")
        }
    }

    @Test("a first push still waiting when the relay stops is sent by the next run once its delay ends")
    func firstPushSurvivesARestart() async throws {
        try await RelayHarness.with(Self.setup(delay: Self.delay)) { harness in
            harness.clock.freeze()
            let phone = try await harness.phone(user: "cust")
            try await Self.disconnect(harness, phone, at: 0)
            var configuration = RelayConfiguration()
            configuration.chat.firstPushDelay = Self.delay
            /// A run of the relay on the harness's store and clock (the harness's own relay
            /// would keep its timer: it never stops).
            func run() -> Relay {
                Relay(
                    configuration: configuration,
                    store: harness.store,
                    masterKey: harness.masterKey,
                    logger: Logger(label: "test.restarted"),
                    clock: harness.clock,
                    onAccepted: {}
                )
            }
            weak var stopped: Relay?
            do {
                let first = run()
                stopped = first
                let receipt = try await first.transcripts.chatEvent(
                    conversation: "chat-1",
                    ChatEventRequest(
                        to: "cust",
                        type: "Message.Text",
                        from: Party(id: "agent-1", name: "Dana"),
                        text: "Still there?"
                    )
                )
                #expect(receipt.scheduled == [phone.deviceID])
                #expect(first.timers.armed == 1)
            }
            // The first run is gone, its timers with it (they never ran as a service here).
            #expect(stopped == nil)

            // The next run, on the same store, a second before the hour is up: nothing yet.
            harness.clock.advance(by: Self.delay - .seconds(1))
            let restarted = run()
            try await withThrowingTaskGroup(of: Void.self) { timers in
                timers.addTask { try await restarted.timers.run() }
                await restarted.transcripts.resumeChatPushes()
                try await eventually("the re-armed timer asleep") {
                    restarted.timers.armed == 1 && harness.clock.sleepers == 1
                }
                #expect(try await harness.store.pendingDisconnects().count == 1)
                #expect(try await harness.store.outboxCounts().byState.isEmpty)
                // The hour is up: the push goes, with the line sealed in it.
                harness.clock.advance(by: .seconds(1))
                try await eventually("the re-armed push") {
                    !harness.accepted(token: phone.messagingToken).isEmpty
                }
                try await eventually("the push marked sent") {
                    try await harness.store.pendingDisconnects().isEmpty
                }
                timers.cancelAll()
            }
            #expect(try Self.sealedText(harness, phone).contains("Still there?"))
        }
    }
}
