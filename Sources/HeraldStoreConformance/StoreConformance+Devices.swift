import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// A messaging or VoIP token belongs to one device: saving a device or setting its tokens takes
    /// them from whoever had them. `updateTokens` leaves a `nil` token as it is, removes an empty
    /// one, clears why the last token died, and answers `nil` for an unknown device.
    public static func aTokenBelongsToOneDevice(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1", token: "aaaa1111", voip: "v1"))
        try await store.saveDevice(StoreFixtures.device("d2", user: "other", token: "aaaa1111", voip: "v2"))
        var d1 = try #require(try await store.device(id: "d1"))
        #expect(d1.messagingToken == nil && d1.voipToken == "v1")
        #expect(try await store.device(id: "d2")?.messagingToken == "aaaa1111")

        let updated = try #require(
            try await store.updateTokens(deviceID: "d1", messaging: "aaaa1111", voip: "v2", now: 5)
        )
        #expect(updated.messagingToken == "aaaa1111" && updated.voipToken == "v2" && updated.updatedAt == 5)
        let d2 = try #require(try await store.device(id: "d2"))
        #expect(d2.messagingToken == nil && d2.voipToken == nil)

        d1 = try #require(try await store.updateTokens(deviceID: "d1", messaging: nil, voip: "", now: 6))
        #expect(d1.messagingToken == "aaaa1111" && d1.voipToken == nil)
        #expect(try await store.device(id: "d1") == d1)

        var dead = StoreFixtures.device("d3")
        dead.messagingToken = nil
        dead.tokenDeadReason = "Unregistered"
        try await store.saveDevice(dead)
        let revived = try #require(try await store.updateTokens(deviceID: "d3", messaging: "fresh", voip: nil, now: 7))
        #expect(revived.messagingToken == "fresh" && revived.tokenDeadReason == nil)
        #expect(try await store.updateTokens(deviceID: "missing", messaging: "x", voip: nil, now: 8) == nil)
        #expect(try await store.device(id: "missing") == nil)
    }

    /// Apps and devices read back as saved (a save replaces); a user's recipients are their
    /// devices, oldest first, with their presence; deleting a device takes its presence with it.
    public static func appsDevicesAndPresence(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        var other = AppRecord(id: "com.example.other", teamID: "TEAM999999", contentPolicy: .none)
        try await store.saveApp(other)
        other.alertTitle = "Hello"
        other.messageTTL = 3_600
        other.collapseByConversation = true
        other.presencePolicy = .perUser
        other.messagePriority = 10
        try await store.saveApp(other)
        #expect(try await store.apps() == [StoreFixtures.app(), other])
        #expect(try await store.app(id: "com.example.other") == other)
        #expect(try await store.app(id: "missing") == nil)

        var d1 = StoreFixtures.device("d1", createdAt: 10)
        d1.previousKeyID = "8899aabbccddeeff"
        d1.sealedSessionKeys = Array(0..<64)
        try await store.saveDevice(StoreFixtures.device("d2", createdAt: 20))
        try await store.saveDevice(d1)
        try await store.saveDevice(StoreFixtures.device("dx", user: "other", createdAt: 5))
        #expect(try await store.device(id: "d1") == d1)
        #expect(try await store.deviceCount() == 3)
        #expect(
            try await store.recipients(userID: "u") == [
                Recipient(device: d1, presence: nil),
                Recipient(device: StoreFixtures.device("d2", createdAt: 20), presence: nil),
            ]
        )
        #expect(try await store.recipients(userID: "nobody") == [])

        let active = PresenceRecord(
            deviceID: "d1",
            userID: "u",
            conversation: "c",
            state: .active,
            updatedAt: 5,
            expiresAt: 100
        )
        try await store.savePresence(active)
        var background = active
        background.state = .background
        background.conversation = nil
        background.updatedAt = 6
        try await store.savePresence(background)
        #expect(try await store.recipients(userID: "u").map(\.presence) == [background, nil])

        #expect(try await store.deleteDevice(id: "d1"))
        #expect(try await store.deleteDevice(id: "d1") == false)
        #expect(try await store.device(id: "d1") == nil)
        #expect(try await store.deviceCount() == 2)
        try await store.saveDevice(d1)
        #expect(try await store.recipients(userID: "u").map(\.presence) == [nil, nil], "the presence went with it")
    }

    /// Transcript positions count 1, 2, 3 … per conversation, none given twice even to concurrent
    /// appends; disconnects are saved (replacing), marked pushed only while they exist, listed
    /// pending until pushed, removed once, and go with their device.
    public static func transcriptsAndDisconnects(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        try await store.saveDevice(StoreFixtures.device("d2"))
        @Sendable func event(_ conversation: String, _ text: String, fromAgent: Bool = true) -> TranscriptEvent {
            TranscriptEvent(
                conversation: conversation,
                userID: "u",
                type: fromAgent ? "Message.Text" : "Notice.TypingStarted",
                sealedAuthor: fromAgent ? [0xA1] : [0xC1],
                fromAgent: fromAgent,
                sealedText: Array(text.utf8),
                at: Int64(text.count)
            )
        }
        let written = [event("conv-a", "one"), event("conv-a", "two", fromAgent: false), event("conv-a", "three")]
        var positions: [Int] = []
        for item in written { positions.append(try await store.appendTranscript(item)) }
        #expect(positions == [1, 2, 3])
        #expect(try await store.appendTranscript(event("conv-b", "other")) == 1)
        let expected = written.enumerated().map { offset, item in
            var item = item
            item.position = offset + 1
            return item
        }
        #expect(try await store.transcript(conversation: "conv-a", after: 0) == expected)
        #expect(try await store.transcript(conversation: "conv-a", after: 2) == [expected[2]])
        #expect(try await store.transcript(conversation: "conv-a", after: 3) == [])
        #expect(try await store.transcript(conversation: "unknown", after: 0) == [])

        let concurrent = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<20 {
                group.addTask { try await store.appendTranscript(event("conv-c", "event \(index)")) }
            }
            var all: [Int] = []
            for try await position in group { all.append(position) }
            return all
        }
        #expect(concurrent.sorted() == Array(1...20))
        #expect(try await store.transcript(conversation: "conv-c", after: 0).map(\.position) == Array(1...20))

        try await store.saveDisconnect(ChatDisconnect(deviceID: "d1", conversation: "conv-a", position: 2, at: 10))
        try await store.saveDisconnect(ChatDisconnect(deviceID: "d2", conversation: "conv-a", position: 3, at: 11))
        try await store.saveDisconnect(ChatDisconnect(deviceID: "d1", conversation: "conv-b", position: 1, at: 12))
        let replaced = ChatDisconnect(deviceID: "d1", conversation: "conv-a", position: 3, at: 13)
        try await store.saveDisconnect(replaced)
        let d2 = ChatDisconnect(deviceID: "d2", conversation: "conv-a", position: 3, at: 11)
        #expect(try await store.disconnects(conversation: "conv-a").sorted(by: byDevice) == [replaced, d2])
        #expect(try await store.pendingDisconnects().count == 3)

        try await store.markDisconnectPushed(deviceID: "d1", conversation: "conv-a")
        var pushed = replaced
        pushed.pushed = true
        #expect(try await store.disconnects(conversation: "conv-a").sorted(by: byDevice) == [pushed, d2])
        #expect(
            try await store.pendingDisconnects().map { [$0.deviceID, $0.conversation] }.sorted {
                $0.joined() < $1.joined()
            } == [["d1", "conv-b"], ["d2", "conv-a"]]
        )
        try await store.markDisconnectPushed(deviceID: "d2", conversation: "conv-z")
        #expect(try await store.disconnects(conversation: "conv-z") == [])

        #expect(try await store.removeDisconnect(deviceID: "d2", conversation: "conv-a") == d2)
        #expect(try await store.removeDisconnect(deviceID: "d2", conversation: "conv-a") == nil)
        #expect(try await store.deleteDevice(id: "d1"))
        #expect(try await store.disconnects(conversation: "conv-a") == [])
        #expect(try await store.disconnects(conversation: "conv-b") == [])
        #expect(try await store.pendingDisconnects() == [])
    }

    private static func byDevice(_ lhs: ChatDisconnect, _ rhs: ChatDisconnect) -> Bool {
        lhs.deviceID < rhs.deviceID
    }

    /// Counts follow every state change; the next due time is the earliest queued push's, claimed
    /// and finished ones aside, and `nil` with nothing queued; the oldest queued push is the one
    /// accepted first among those queued (one back from a failed attempt included), `nil` with
    /// nothing queued.
    public static func outboxCountsAndNextDueTime(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        #expect(try await store.nextDueTime() == nil)
        let empty = try await store.outboxCounts()
        #expect(PushState.allCases.allSatisfy { empty[$0] == 0 })
        #expect(empty.oldestQueuedAt == nil)
        try await store.saveDevice(StoreFixtures.device("d1"))
        _ = try await store.accept(
            StoreFixtures.ingest([
                StoreFixtures.push("p1", device: "d1", at: 300),
                StoreFixtures.push("p2", device: "d1", at: 100),
                StoreFixtures.push("p3", device: "d1", at: 200),
            ])
        )
        #expect(try await store.nextDueTime() == 100)
        #expect(try await store.outboxCounts()[.queued] == 3)
        #expect(try await store.outboxCounts().oldestQueuedAt == 100)

        #expect(try await claimIDs(store, limit: 1, now: 150) == ["p2"])
        #expect(try await store.nextDueTime() == 200)
        var counts = try await store.outboxCounts()
        #expect(counts[.queued] == 2 && counts[.sending] == 1)
        #expect(counts.oldestQueuedAt == 200, "a claimed push is not waiting in the queue")

        try await store.complete(
            [PushCompletion(pushID: "p2", disposition: .retry(at: 400), reason: "later", deadToken: nil)],
            now: 160
        )
        #expect(try await store.nextDueTime() == 200)
        #expect(try await store.outboxCounts()[.queued] == 3)
        #expect(try await store.outboxCounts().oldestQueuedAt == 100, "back for a retry: waiting since accepted")

        #expect(try await claimIDs(store, now: 300) == ["p3", "p1"])
        #expect(try await store.nextDueTime() == 400)
        try await store.complete(
            [
                PushCompletion(pushID: "p3", disposition: .finish(.delivered), reason: nil, deadToken: nil),
                PushCompletion(pushID: "p1", disposition: .finish(.failed), reason: "BadTopic", deadToken: nil),
            ],
            now: 310
        )
        #expect(try await claimIDs(store, now: 400) == ["p2"])
        #expect(try await store.nextDueTime() == nil)
        try await store.complete(
            [PushCompletion(pushID: "p2", disposition: .finish(.delivered), reason: nil, deadToken: nil)],
            now: 410
        )
        counts = try await store.outboxCounts()
        #expect(counts[.delivered] == 2 && counts[.failed] == 1)
        #expect(counts[.queued] == 0 && counts[.sending] == 0 && counts[.expired] == 0)
        #expect(counts.oldestQueuedAt == nil)
        #expect(try await store.nextDueTime() == nil)
    }
}
