import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// A message's sealed sender and a chat event's sealed author come back as written; a store
    /// holds no clear sender it was not given by an older version, and `sealSenders` leaves an
    /// unknown or already sealed record as it is.
    public static func sealedSendersStaySealed(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        #expect(try await store.clearSenders(limit: 10) == [])
        var message = StoreFixtures.message("m1", at: 0, expires: 1_000)
        message.sealedSender = [9, 8, 7, 6]
        _ = try await store.accept(StoreFixtures.ingest([], message: message))
        #expect(try await store.message(id: "m1") == message)
        var event = Self.chatEvent("c1", at: 10)
        event.sealedAuthor = [5, 4, 3]
        #expect(try await store.appendTranscript(event) == 1)
        event.position = 1
        #expect(try await store.transcript(conversation: "c1", after: 0) == [event])
        #expect(try await store.clearSenders(limit: 10) == [])

        try await store.sealSenders([
            .message(id: "m1"): [1], .message(id: "unknown"): [2],
            .transcriptEvent(conversation: "c1", position: 1): [3],
            .transcriptEvent(conversation: "c1", position: 2): [4],
        ])
        try await store.sealSenders([:])
        #expect(try await store.message(id: "m1")?.sealedSender == [9, 8, 7, 6])
        #expect(try await store.message(id: "unknown") == nil)
        #expect(try await store.transcript(conversation: "c1", after: 0) == [event])
        let reopened = try await engine.open(storage)
        #expect(try await reopened.message(id: "m1") == message)
        #expect(try await reopened.transcript(conversation: "c1", after: 0) == [event])
    }

    /// The first event starts a chat with its user and time, each event moves its last event
    /// time; a chat ends once (by `endChat`, or when idle: at its last event plus the idle time),
    /// and an ended chat takes no event.
    public static func chatsStartEndAndIdle(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        #expect(try await store.chat(conversation: "c1") == nil)
        #expect(try await store.endChat(conversation: "c1", at: 5) == nil)
        #expect(try await store.appendTranscript(Self.chatEvent("c1", at: 100)) == 1)
        #expect(try await store.appendTranscript(Self.chatEvent("c1", at: 200)) == 2)
        #expect(try await store.appendTranscript(Self.chatEvent("c2", user: "v", at: 150)) == 1)
        #expect(
            try await store.chat(conversation: "c1")
                == ChatRecord(conversation: "c1", userID: "u", startedAt: 100, lastEventAt: 200)
        )

        // c1 idles from 200, c2 from 150: at 290 with an idle time of 100 only c2 is idle.
        #expect(try await store.endIdleChats(now: 290, idle: 100) == 1)
        #expect(try await store.chat(conversation: "c2")?.endedAt == 250)
        #expect(try await store.chat(conversation: "c1")?.endedAt == nil)
        #expect(try await store.endIdleChats(now: 290, idle: 100) == 0)

        await #expect(throws: StoreError.conflict) {
            try await store.appendTranscript(Self.chatEvent("c2", user: "v", at: 300))
        }
        #expect(try await store.transcript(conversation: "c2", after: 0).map(\.position) == [1])
        #expect(try await store.chat(conversation: "c2")?.lastEventAt == 150)

        let ended = try await store.endChat(conversation: "c1", at: 400)
        #expect(ended == ChatRecord(conversation: "c1", userID: "u", startedAt: 100, lastEventAt: 200, endedAt: 400))
        #expect(try await store.endChat(conversation: "c1", at: 500)?.endedAt == 400, "the first end stays")
        #expect(try await store.endIdleChats(now: 10_000, idle: 100) == 0, "an ended chat does not end again")
        await #expect(throws: StoreError.conflict) {
            try await store.appendTranscript(Self.chatEvent("c1", at: 600))
        }
    }

    /// Chats ended before the cutoff go with their transcripts and disconnects; later ended and
    /// open chats stay, however old; disconnects in conversations without a chat go once older
    /// than the cutoff.
    public static func endedChatsArePurged(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        for (conversation, at) in [("old", Int64(10)), ("recent", 20), ("open", 0)] {
            _ = try await store.appendTranscript(Self.chatEvent(conversation, at: at))
            try await store.saveDisconnect(
                ChatDisconnect(deviceID: "d1", conversation: conversation, position: 1, at: at)
            )
        }
        _ = try await store.endChat(conversation: "old", at: 100)
        _ = try await store.endChat(conversation: "recent", at: 900)
        try await store.saveDisconnect(ChatDisconnect(deviceID: "d1", conversation: "no-chat-old", position: 0, at: 50))
        try await store.saveDisconnect(
            ChatDisconnect(deviceID: "d1", conversation: "no-chat-new", position: 0, at: 950)
        )

        #expect(try await store.deleteEndedChats(endedBefore: 100) == 0, "ended at the cutoff: not before it")
        #expect(try await store.deleteEndedChats(endedBefore: 500) == 1)
        #expect(try await store.chat(conversation: "old") == nil)
        #expect(try await store.transcript(conversation: "old", after: 0) == [])
        #expect(try await store.disconnects(conversation: "old") == [])
        #expect(try await store.disconnects(conversation: "no-chat-old") == [])
        #expect(try await store.disconnects(conversation: "no-chat-new").count == 1)
        for kept in ["recent", "open"] {
            #expect(try await store.chat(conversation: kept) != nil, "\(kept)")
            #expect(try await store.transcript(conversation: kept, after: 0).count == 1, "\(kept)")
            #expect(try await store.disconnects(conversation: kept).count == 1, "\(kept)")
        }
        #expect(try await store.deleteEndedChats(endedBefore: 500) == 0)
        // Purged, the conversation is unknown: an event starts a new chat at position 1.
        #expect(try await store.appendTranscript(Self.chatEvent("old", at: 1_000)) == 1)
    }

    private static func chatEvent(_ conversation: String, user: String = "u", at time: Int64) -> TranscriptEvent {
        TranscriptEvent(
            conversation: conversation,
            userID: user,
            type: "Message.Text",
            sealedAuthor: [0xA1, 0xA2],
            fromAgent: true,
            sealedText: [1],
            at: time
        )
    }
}
