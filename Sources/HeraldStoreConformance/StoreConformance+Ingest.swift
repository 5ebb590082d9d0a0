import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// An idempotency key writes once: a repeat writes nothing and answers the first receipt, on
    /// any node; of 20 concurrent ingests with one key on two nodes exactly one writes and every
    /// other answers its receipt. An ingest that fails writes nothing, its key included.
    public static func idempotencyRaces(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let otherNode = try await engine.open(storage)
        try await store.saveDevice(StoreFixtures.device("d1"))
        let first = StoreFixtures.ingest(
            [StoreFixtures.push("x", device: "d1", at: 0)],
            key: "k",
            message: StoreFixtures.message("m-x", expires: 10_000),
            receipt: [1, 2]
        )
        let second = StoreFixtures.ingest(
            [StoreFixtures.push("y", device: "d1", at: 0)],
            key: "k",
            message: StoreFixtures.message("m-y", expires: 10_000),
            receipt: [9]
        )
        #expect(try await store.accept(first) == .accepted)
        #expect(try await otherNode.accept(second) == .duplicate(receipt: [1, 2]))
        #expect(try await store.accept(second) == .duplicate(receipt: [1, 2]))
        #expect(try await store.push(id: "y") == nil)
        #expect(try await store.message(id: "m-y") == nil)
        // Without a key every ingest writes.
        #expect(
            try await store.accept(StoreFixtures.ingest([StoreFixtures.push("n1", device: "d1", at: 0)])) == .accepted
        )
        #expect(
            try await store.accept(StoreFixtures.ingest([StoreFixtures.push("n2", device: "d1", at: 0)])) == .accepted
        )

        let racers = 20
        let nodes = [store, otherNode]
        let outcomes = try await withThrowingTaskGroup(of: (Int, IngestOutcome).self) { group in
            for index in 0..<racers {
                let node = nodes[index % 2]
                group.addTask {
                    let ingest = StoreFixtures.ingest(
                        [StoreFixtures.push("race-\(index)", device: "d1", at: 1)],
                        key: "race",
                        message: StoreFixtures.message("race-message-\(index)", expires: 10_000),
                        receipt: [UInt8(100 + index)]
                    )
                    return (index, try await node.accept(ingest))
                }
            }
            var all: [Int: IngestOutcome] = [:]
            for try await (index, outcome) in group { all[index] = outcome }
            return all
        }
        let winners = outcomes.filter { $0.value == .accepted }.map(\.key)
        #expect(winners.count == 1)
        let winner = try #require(winners.first)
        for (index, outcome) in outcomes where index != winner {
            #expect(outcome == .duplicate(receipt: [UInt8(100 + winner)]), "racer \(index)")
        }
        for index in 0..<racers {
            #expect((try await store.push(id: "race-\(index)") != nil) == (index == winner), "racer \(index)")
            #expect((try await store.message(id: "race-message-\(index)") != nil) == (index == winner))
        }

        // All or nothing: a push id already taken fails the ingest, and its message and key are
        // not written.
        let clash = StoreFixtures.ingest(
            [StoreFixtures.push("fresh", device: "d1", at: 2), StoreFixtures.push("x", device: "d1", at: 2)],
            key: "clash",
            message: StoreFixtures.message("m-clash", expires: 10_000),
            receipt: [5]
        )
        await #expect(throws: (any Error).self) { try await store.accept(clash) }
        #expect(try await store.message(id: "m-clash") == nil)
        #expect(try await store.push(id: "fresh") == nil)
        #expect(try await store.push(id: "x")?.createdAt == 0)
        #expect(
            try await store.accept(StoreFixtures.ingest([], key: "clash", receipt: [6])) == .accepted,
            "the failed ingest's key was not kept"
        )
    }

    /// A burst of ingests from many callers at once is answered as if each came alone (an engine
    /// may write them together): keyed, unkeyed and repeated keys each get their own outcome, and
    /// an ingest whose push id is taken fails alone, writing nothing, while the rest are written.
    public static func burstsAnswerEachAsAlone(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        #expect(
            try await store.accept(StoreFixtures.ingest([StoreFixtures.push("taken", device: "d1", at: 0)]))
                == .accepted
        )
        let count = 120
        let outcomes = await withTaskGroup(of: (Int, Result<IngestOutcome, any Error>).self) { group in
            for index in 0..<count {
                group.addTask {
                    do {
                        return (index, .success(try await store.accept(burstIngest(index))))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var all: [Int: Result<IngestOutcome, any Error>] = [:]
            for await (index, outcome) in group { all[index] = outcome }
            return all
        }
        for index in 0..<count {
            try await checkBurstOutcome(store, index, outcomes)
        }
        #expect(try await store.message(id: "bm-0") != nil)

        try await burstOfReadsAnswersEachUser(store)
        #expect(try await store.recipients(userID: "nobody").isEmpty)
    }

    /// The `index`th ingest of `burstsAnswerEachAsAlone`'s burst: by `index % 4`, a key of its
    /// own, no key, or a key shared by a pair; ingest 63 reuses a taken push id.
    private static func burstIngest(_ index: Int) -> Ingest {
        switch index % 4 {
        case 0:  // a key of its own
            return StoreFixtures.ingest(
                [StoreFixtures.push("b-\(index)", device: "d1", at: 1)],
                key: "burst-\(index)",
                message: StoreFixtures.message("bm-\(index)", expires: 10_000),
                receipt: [UInt8(index)]
            )
        case 1:  // no key
            return StoreFixtures.ingest([StoreFixtures.push("b-\(index)", device: "d1", at: 1)])
        case 2:  // a key shared with the next one
            return StoreFixtures.ingest(
                [StoreFixtures.push("b-\(index)", device: "d1", at: 1)],
                key: "pair-\(index / 4)",
                receipt: [UInt8(index)]
            )
        default:
            if index == 63 {
                // A push id already taken: this ingest alone fails.
                return StoreFixtures.ingest(
                    [
                        StoreFixtures.push("b-63", device: "d1", at: 1),
                        StoreFixtures.push("taken", device: "d1", at: 1),
                    ],
                    key: "clash",
                    message: StoreFixtures.message("bm-63", expires: 10_000)
                )
            }
            return StoreFixtures.ingest(
                [StoreFixtures.push("b-\(index)", device: "d1", at: 1)],
                key: "pair-\(index / 4)",
                receipt: [UInt8(index)]
            )
        }
    }

    /// Ingest `index`'s outcome in the burst is what it would be alone; of a pair sharing a key,
    /// one writes and the other answers its receipt.
    private static func checkBurstOutcome(
        _ store: any HeraldStore,
        _ index: Int,
        _ outcomes: [Int: Result<IngestOutcome, any Error>]
    ) async throws {
        let outcome = try #require(outcomes[index])
        let written = try await store.push(id: "b-\(index)") != nil
        switch index % 4 {
        case 0, 1:
            #expect((try? outcome.get()) == .accepted, "ingest \(index)")
            #expect(written, "ingest \(index)")
        case 2 where index + 1 == 63, 3 where index == 63:
            if index == 63 {
                #expect(throws: (any Error).self, "ingest 63") { try outcome.get() }
                #expect(!written)
                #expect(try await store.message(id: "bm-63") == nil)
            } else {
                #expect((try? outcome.get()) == .accepted, "ingest \(index)")
            }
        default:
            // Of a pair, one writes and the other answers its receipt.
            let partner = index % 4 == 2 ? index + 1 : index - 1
            let mine = try outcome.get()
            let theirs = try #require(outcomes[partner]).get()
            let partnerWritten = try await store.push(id: "b-\(partner)") != nil
            #expect(written != partnerWritten, "pair \(index / 4)")
            if written {
                #expect(mine == .accepted)
                #expect(theirs == .duplicate(receipt: [UInt8(index)]))
            }
        }
    }

    /// Every ingest first reads its user's devices; a burst of those reads (an engine may answer
    /// them together) gives each user exactly its own devices, in order.
    private static func burstOfReadsAnswersEachUser(_ store: any HeraldStore) async throws {
        for user in 0..<30 {
            for number in 0..<2 {
                try await store.saveDevice(
                    StoreFixtures.device("r\(user)-\(number)", user: "reader-\(user)", createdAt: Int64(number))
                )
            }
        }
        let reads = try await withThrowingTaskGroup(of: (Int, [String]).self) { group in
            for index in 0..<90 {
                group.addTask {
                    let user = index % 30
                    return (index, try await store.recipients(userID: "reader-\(user)").map(\.device.id))
                }
            }
            var all: [Int: [String]] = [:]
            for try await (index, devices) in group { all[index] = devices }
            return all
        }
        for index in 0..<90 {
            #expect(reads[index] == ["r\(index % 30)-0", "r\(index % 30)-1"], "read \(index)")
        }
    }

    /// Messages past their retention, idempotency keys and finished pushes (with their payload and
    /// history) older than the history limit go; newer ones, and queued or claimed pushes however
    /// old, stay.
    public static func retention(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        let far: Int64 = 99_999_999
        _ = try await store.accept(
            StoreFixtures.ingest(
                [
                    StoreFixtures.push("old-done", device: "d1", at: 0),
                    StoreFixtures.push("old-failed", device: "d1", at: 1),
                    StoreFixtures.push("old-queued", device: "d1", at: 2, expires: far),
                    StoreFixtures.push("old-sending", device: "d1", at: 3, expires: far),
                ],
                key: "k-old",
                message: StoreFixtures.message("m-old", at: 0, expires: 100),
                receipt: [7]
            )
        )
        #expect(
            try await claimIDs(store, owner: "w", now: 10, leaseUntil: far) == [
                "old-done", "old-failed", "old-queued", "old-sending",
            ]
        )
        try await store.complete(
            [
                PushCompletion(pushID: "old-done", disposition: .finish(.delivered), reason: nil, deadToken: nil),
                PushCompletion(pushID: "old-failed", disposition: .finish(.failed), reason: "BadTopic", deadToken: nil),
                PushCompletion(pushID: "old-queued", disposition: .retry(at: 5_000), reason: "later", deadToken: nil),
            ],
            now: 20
        )
        _ = try await store.accept(
            StoreFixtures.ingest(
                [StoreFixtures.push("new-done", device: "d1", at: 600)],
                key: "k-new",
                message: StoreFixtures.message("m-new", at: 600, expires: 5_000),
                receipt: [8]
            )
        )
        #expect(try await claimIDs(store, now: 600) == ["new-done"])
        try await store.complete(
            [PushCompletion(pushID: "new-done", disposition: .finish(.delivered), reason: nil, deadToken: nil)],
            now: 650
        )

        let removed = try await store.deleteExpired(now: 1_000, historyBefore: 500)
        #expect(removed.messages == 1 && removed.pushes == 2)
        #expect(try await store.message(id: "m-old") == nil)
        #expect(try await store.message(id: "m-new") != nil)
        for id in ["old-done", "old-failed"] {
            #expect(try await store.push(id: id) == nil, "\(id)")
            #expect(try await store.deliveryLog(pushID: id) == [], "\(id)")
        }
        #expect(try await store.push(id: "old-queued")?.state == .queued)
        #expect(try await store.deliveryLog(pushID: "old-queued").map(\.reason) == [nil, "later"])
        #expect(try await store.push(id: "old-sending")?.state == .sending)
        #expect(try await store.push(id: "new-done")?.state == .delivered)
        #expect(try await store.accept(StoreFixtures.ingest([], key: "k-old", receipt: [])) == .accepted)
        #expect(try await store.accept(StoreFixtures.ingest([], key: "k-new", receipt: [])) == .duplicate(receipt: [8]))
        let again = try await store.deleteExpired(now: 1_000, historyBefore: 500)
        #expect(again.messages == 0 && again.pushes == 0)
    }
}
