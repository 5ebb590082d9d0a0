import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// `pushes(matching:)` keeps a subject's pushes only (a message's across its devices, a
    /// callback's push by its `<id>#<n>` name), alone or with other conditions; every listed push
    /// shows its device's user (none once the device is gone) and its subject.
    /// `pushSummaries(ids:)` reads the named pushes as the listing shows them, an id named twice
    /// once, none for an unknown id, nothing for no ids, and refuses more than 1,000 ids.
    public static func pushesBySubjectAndByID(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1", user: "alice"))
        try await store.saveDevice(StoreFixtures.androidDevice("a1", user: "alice", token: "fcm-a1"))
        try await store.saveDevice(StoreFixtures.device("d2", user: "bob"))
        func push(_ id: String, device: String, subject: String, at time: Int64) -> OutboxEntry {
            var entry =
                device == "a1"
                ? StoreFixtures.fcmPush(id, device: device, at: time) : StoreFixtures.push(id, device: device, at: time)
            entry.subjectID = subject
            return entry
        }
        _ = try await store.accept(
            StoreFixtures.ingest([
                push("p1", device: "d1", subject: "m1", at: 10), push("p2", device: "a1", subject: "m1", at: 20),
                push("p3", device: "d2", subject: "m2", at: 30), push("p4", device: "d1", subject: "cb#1", at: 40),
                push("p5", device: "d2", subject: "m1", at: 50),
            ])
        )
        #expect(try await store.deleteDevice(id: "d2"))

        let node = try await engine.open(storage)
        func ids(_ query: PushQuery) async throws -> [String] {
            try await node.pushes(matching: query).pushes.map(\.pushID)
        }
        #expect(try await ids(PushQuery(subjectID: "m1")) == ["p5", "p2", "p1"])
        #expect(try await ids(PushQuery(userID: "alice", subjectID: "m1")) == ["p2", "p1"])
        #expect(try await ids(PushQuery(deviceID: "a1", subjectID: "m1")) == ["p2"])
        #expect(try await ids(PushQuery(subjectID: "m1", since: 15)) == ["p5", "p2"])
        #expect(try await ids(PushQuery(subjectID: "cb#1")) == ["p4"])
        #expect(try await ids(PushQuery(subjectID: "cb")) == [])
        let page = try await node.pushes(matching: PushQuery(subjectID: "m1", limit: 2))
        #expect(page.pushes.map(\.pushID) == ["p5", "p2"] && page.next != nil)
        #expect(try await ids(PushQuery(subjectID: "m1", after: page.next)) == ["p1"])

        let all = try await node.pushes(matching: PushQuery()).pushes
        let listed = Dictionary(uniqueKeysWithValues: all.map { ($0.pushID, $0) })
        #expect(listed["p2"]?.userID == "alice" && listed["p2"]?.subjectID == "m1" && listed["p2"]?.network == .fcm)
        #expect(listed["p4"]?.userID == "alice" && listed["p4"]?.subjectID == "cb#1")
        // The deactivated device's push: its subject stays, its user and app are gone with it.
        #expect(listed["p3"]?.userID == nil && listed["p3"]?.appID == nil && listed["p3"]?.subjectID == "m2")

        let read = try await node.pushSummaries(ids: ["p3", "p1", "ghost", "p1"])
        #expect(read.count == 2 && Set(read) == Set(all.filter { ["p1", "p3"].contains($0.pushID) }))
        #expect(try await node.pushSummaries(ids: []).isEmpty)
        #expect(try await node.pushSummaries(ids: ["ghost"]).isEmpty)
        let many = (0..<PushSummary.maximumLookup).map { "p\($0)" }
        #expect(try await node.pushSummaries(ids: many).map(\.pushID).sorted() == ["p1", "p2", "p3", "p4", "p5"])
        await #expect(throws: StoreError.invalid) { try await node.pushSummaries(ids: many + ["p1001"]) }
    }

    /// `pushes(matching:)` with a conversation keeps the pushes of that conversation's messages
    /// (each message's across its devices), alone or with other conditions, and no other.
    public static func pushesByConversation(_ engine: some StoreEngine) async throws {
        let store = try await engine.makeStore()
        try await store.saveDevice(StoreFixtures.device("d1", user: "alice"))
        try await store.saveDevice(StoreFixtures.device("d2", user: "alice"))
        for (index, conversation) in ["conv-a", "conv-b", "conv-a"].enumerated() {
            var message = StoreFixtures.message("m\(index)", user: "alice", at: Int64(index), expires: 1_000_000)
            message.conversation = conversation
            let pushes = ["d1", "d2"].map { device in
                var entry = StoreFixtures.push("p\(index)-\(device)", device: device, at: Int64(index))
                entry.subjectID = message.id
                return entry
            }
            _ = try await store.accept(StoreFixtures.ingest(pushes, message: message))
        }
        func ids(_ query: PushQuery) async throws -> [String] {
            try await store.pushes(matching: query).pushes.map(\.pushID)
        }
        #expect(try await ids(PushQuery(conversation: "conv-a")) == ["p2-d2", "p2-d1", "p0-d2", "p0-d1"])
        #expect(try await ids(PushQuery(deviceID: "d1", conversation: "conv-a")) == ["p2-d1", "p0-d1"])
        #expect(try await ids(PushQuery(conversation: "conv-b")) == ["p1-d2", "p1-d1"])
        #expect(try await ids(PushQuery(conversation: "conv-none")).isEmpty)
    }

    /// `queueCounts()` counts the queued and sending pushes and finds the oldest queued one, as
    /// `outboxCounts()` does for those two states; nothing queued has no oldest.
    public static func queueCountsAgreeWithTheOutbox(_ engine: some StoreEngine) async throws {
        let store = try await engine.makeStore()
        #expect(try await store.queueCounts() == OutboxCounts(byState: [.queued: 0, .sending: 0], oldestQueuedAt: nil))
        try await store.saveDevice(StoreFixtures.device("d1"))
        let pushes = (1...4).map { StoreFixtures.push("p\($0)", device: "d1", at: Int64($0) * 10) }
        #expect(try await store.accept(StoreFixtures.ingest(pushes)) == .accepted)
        let claimed = try await store.claim(limit: 1, owner: "w", now: 1000, leaseUntil: 9000)
        #expect(claimed.map(\.entry.pushID) == ["p1"])
        let queue = try await store.queueCounts()
        let outbox = try await store.outboxCounts()
        #expect(queue[.queued] == 3 && queue[.sending] == 1 && queue.oldestQueuedAt == 20)
        #expect(queue[.queued] == outbox[.queued] && queue[.sending] == outbox[.sending])
        #expect(queue.oldestQueuedAt == outbox.oldestQueuedAt)
    }

    /// `pushActivity(since:sampleLimit:)` counts the pushes that finished at or after `since` by
    /// minute, network, state and reason, in that order, each push once at its last change
    /// (retried then delivered: delivered, in the minute it was); queued and claimed pushes and
    /// those that finished before `since` are not counted. Its samples are the latest finished
    /// pushes, the last first, with their acceptance, finish and `shown` receipt times (the
    /// relay's), at most the limit asked (none for 0 or less).
    public static func pushActivityCountsFinishedPushesByMinute(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1", user: "alice"))
        try await store.saveDevice(StoreFixtures.androidDevice("a1", user: "alice", token: "fcm-a1"))
        try await store.saveDevice(StoreFixtures.androidDevice("a2", user: "alice", token: "fcm-a2"))
        let minute: Int64 = 60_000
        _ = try await store.accept(
            StoreFixtures.ingest([
                StoreFixtures.push("p-old", device: "d1", at: 1), StoreFixtures.push("p1", device: "d1", at: 2),
                StoreFixtures.push("p2", device: "d1", at: 3), StoreFixtures.push("p3", device: "d1", at: 4),
                StoreFixtures.fcmPush("p4", device: "a1", at: 5), StoreFixtures.fcmPush("p5", device: "a2", at: 6),
                StoreFixtures.push("p6", device: "d1", at: 7), StoreFixtures.push("p-queued", device: "d1", at: 8),
            ])
        )
        #expect(try await claimIDs(store, limit: 7, now: 10).count == 7)
        func finish(_ id: String, _ state: PushState, reason: String? = nil) -> PushCompletion {
            PushCompletion(pushID: id, disposition: .finish(state), reason: reason, deadToken: nil)
        }
        try await store.complete([finish("p-old", .delivered)], now: 10 * minute - 1)
        try await store.complete([finish("p1", .delivered)], now: 10 * minute)
        try await store.complete(
            [
                finish("p2", .delivered),
                PushCompletion(
                    pushID: "p5",
                    disposition: .retry(at: 11 * minute),
                    reason: "UNAVAILABLE",
                    deadToken: nil
                ),
            ],
            now: 10 * minute + 59_999
        )
        try await store.complete([finish("p3", .failed, reason: "BadTopic (400)")], now: 11 * minute + 5)
        try await store.complete(
            [
                PushCompletion(
                    pushID: "p4",
                    disposition: .finish(.tokenDead),
                    reason: "UNREGISTERED",
                    deadToken: (deviceID: "a1", token: "fcm-a1")
                )
            ],
            now: 11 * minute + 7
        )
        #expect(try await claimIDs(store, limit: 1, now: 11 * minute) == ["p5"])
        try await store.complete([finish("p5", .delivered)], now: 12 * minute + 1)
        let shown = PushReceipt(pushID: "p1", stage: .shown, deviceTime: 5, receivedAt: 10 * minute + 900, failure: nil)
        let opened = PushReceipt(
            pushID: "p2",
            stage: .opened,
            deviceTime: 6,
            receivedAt: 10 * minute + 950,
            failure: nil
        )
        #expect(
            try await store.apply([.recordReceipt(shown, events: []), .recordReceipt(opened, events: [])]) == [
                .applied, .applied,
            ]
        )

        let node = try await engine.open(storage)
        let activity = try await node.pushActivity(since: 10 * minute, sampleLimit: 10)
        #expect(
            activity.counts == [
                PushActivity.Count(minute: 10, network: .apns, state: .delivered, reason: nil, count: 2),
                PushActivity.Count(minute: 11, network: .apns, state: .failed, reason: "BadTopic (400)", count: 1),
                PushActivity.Count(minute: 11, network: .fcm, state: .tokenDead, reason: "UNREGISTERED", count: 1),
                PushActivity.Count(minute: 12, network: .fcm, state: .delivered, reason: nil, count: 1),
            ]
        )
        let samples = [
            PushActivity.Sample(network: .fcm, state: .delivered, createdAt: 6, updatedAt: 12 * minute + 1),
            PushActivity.Sample(network: .fcm, state: .tokenDead, createdAt: 5, updatedAt: 11 * minute + 7),
            PushActivity.Sample(network: .apns, state: .failed, createdAt: 4, updatedAt: 11 * minute + 5),
            PushActivity.Sample(network: .apns, state: .delivered, createdAt: 3, updatedAt: 10 * minute + 59_999),
            PushActivity.Sample(
                network: .apns,
                state: .delivered,
                createdAt: 2,
                updatedAt: 10 * minute,
                shownAt: 10 * minute + 900
            ),
        ]
        #expect(activity.samples == samples)
        #expect(try await node.pushActivity(since: 10 * minute, sampleLimit: 2).samples == Array(samples.prefix(2)))
        #expect(try await node.pushActivity(since: 10 * minute, sampleLimit: 0).samples.isEmpty)
        #expect(try await node.pushActivity(since: 10 * minute, sampleLimit: -3).samples.isEmpty)
        let later = try await node.pushActivity(since: 12 * minute, sampleLimit: 10)
        #expect(later.counts.map(\.minute) == [12] && later.samples == [samples[0]])
        #expect(
            try await node.pushActivity(since: 13 * minute, sampleLimit: 10) == PushActivity(counts: [], samples: [])
        )
    }

    /// `pendingCallbacks(limit:)` lists the callbacks still waiting (scheduled, or pushed and
    /// not answered) by due time then id, at most `limit`; `ringingCalls(limit:)` the calls still
    /// ringing, newest first, with their devices' reports, at most `limit`. Neither lists an
    /// ended one.
    public static func pendingCallbacksAndRingingCalls(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let states: [(String, CallbackState, Int64)] = [
            ("cb-a", .scheduled, 300), ("cb-e", .scheduled, 100), ("cb-b", .pushed, 100), ("cb-c", .connected, 50),
            ("cb-d", .expired, 10), ("cb-f", .cancelled, 20),
        ]
        for (id, state, due) in states {
            var record = callbackRecord(id, due: due)
            record.state = state
            _ = try await store.scheduleCallback(
                record,
                history: CallbackHistoryEntry(at: 0, event: .scheduled, state: state, nextPushAt: due),
                idempotencyKey: nil
            )
        }
        let node = try await engine.open(storage)
        #expect(try await node.pendingCallbacks(limit: 10).map(\.id) == ["cb-b", "cb-e", "cb-a"])
        #expect(try await node.pendingCallbacks(limit: 2).map(\.id) == ["cb-b", "cb-e"])
        #expect(try await node.pendingCallbacks(limit: 0).isEmpty)
        #expect(try await node.pendingCallbacks(limit: 10).first == (try await store.callback(id: "cb-b")))

        for (id, time, devices) in [
            ("call-1", 1_000, ["d1"]), ("call-2", 2_000, ["d2", "d1"]), ("call-3", 3_000, ["d1"]),
        ] {
            let ingest = Ingest(idempotencyKey: "call:" + id, message: nil, pushes: [], receipt: [])
            #expect(
                try await store.acceptCall(ingest, call: callRecord(id, devices: devices, at: Int64(time))) == .accepted
            )
        }
        _ = try await reportRinging(store, call: "call-2", device: "d2", at: 2_100, event: "e-ringing")
        let answered = CallEnd(callID: "call-3", state: .answered, deviceID: "d1", at: 3_100)
        #expect(try await store.endCall(answered) != .unknown)
        let ringing = try await node.ringingCalls(limit: 10)
        #expect(ringing.map(\.id) == ["call-2", "call-1"])
        #expect(ringing.first == (try await node.call(id: "call-2")))
        #expect(ringing.first?.devices.map(\.report) == [.pushed, .ringing], "d1 pushed, d2 ringing")
        #expect(try await node.ringingCalls(limit: 1).map(\.id) == ["call-2"])
        #expect(try await node.ringingCalls(limit: 0).isEmpty)
    }
}
