import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// A held message is written with its key once, on any node; a hold for a user who has a
    /// device (of the app named) writes nothing, its key included (`stale`); of two releases of
    /// one message on two nodes at once exactly one writes its pushes, which are claimed like
    /// any push; a hold that ended releases nothing.
    public static func messagesToNobodyAreHeldOnce(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let otherNode = try await engine.open(storage)
        let first = StoreFixtures.message("m1", user: "alice", at: 1, expires: 900_000)
        #expect(try await store.hold(held(first, key: "k", receipt: [1]), until: 10_000, appID: nil) == .accepted)
        #expect(try await store.message(id: "m1") == first)
        // The key is used: a repeat, on another node, answers the first receipt and writes nothing.
        let repeated = StoreFixtures.message("m1-again", user: "alice", at: 2, expires: 900_000)
        #expect(
            try await otherNode.hold(held(repeated, key: "k", receipt: [2]), until: 10_000, appID: nil)
                == .duplicate(receipt: [1])
        )
        #expect(try await otherNode.message(id: "m1-again") == nil)
        #expect(
            try await otherNode.heldMessages(userID: "alice", now: 5)
                == [HeldMessage(messageID: "m1", userID: "alice", heldAt: 1, heldUntil: 10_000)]
        )
        #expect(try await otherNode.heldMessages(userID: "alice", now: 10_000).isEmpty)

        // A user with a device: nothing held, the key unused.
        try await store.saveDevice(StoreFixtures.device("b1", user: "bob"))
        let forBob = StoreFixtures.message("m-bob", user: "bob", at: 3, expires: 900_000)
        #expect(try await store.hold(held(forBob, key: "kb", receipt: [3]), until: 10_000, appID: nil) == .stale)
        #expect(try await store.message(id: "m-bob") == nil)
        #expect(try await store.heldMessages(userID: "bob", now: 5).isEmpty)
        #expect(try await store.accept(StoreFixtures.ingest([], key: "kb", message: forBob)) == .accepted)
        // Held for another app's devices: bob has none of that app's.
        let forOther = StoreFixtures.message("m-other", user: "bob", at: 4, expires: 900_000)
        #expect(try await store.hold(held(forOther), until: 10_000, appID: "com.example.other") == .accepted)
        #expect(
            try await store.hold(
                held(StoreFixtures.message("m-same", user: "bob", at: 4, expires: 900_000)),
                until: 10_000,
                appID: StoreFixtures.appID
            ) == .stale
        )
        #expect(try await store.heldMessages(userID: "bob", now: 5).map(\.appID) == ["com.example.other"])

        // Alice's phone activates on both nodes at once: one release writes, the other nothing.
        try await store.saveDevice(StoreFixtures.device("a1", user: "alice"))
        let releases = try await withThrowingTaskGroup(of: [String].self) { group in
            for (index, node) in [store, otherNode].enumerated() {
                group.addTask {
                    let push = StoreFixtures.push("r\(index)", device: "a1", at: 6)
                    return try await node.release([HeldRelease(messageID: "m1", pushes: [push])], now: 6)
                }
            }
            var all: [[String]] = []
            for try await released in group { all.append(released) }
            return all
        }
        #expect(releases.sorted { $0.count < $1.count } == [[], ["m1"]])
        let written = [try await store.push(id: "r0"), try await store.push(id: "r1")].compactMap { $0 }
        #expect(written.count == 1)
        #expect(written.first?.state == .queued)
        #expect(try await store.heldMessages(userID: "alice", now: 6).isEmpty)
        #expect(try await claimIDs(store, now: 7) == written.map(\.pushID))
        #expect(try await store.release([HeldRelease(messageID: "m1", pushes: [])], now: 8).isEmpty)

        // A hold that ended releases nothing.
        let late = StoreFixtures.message("m-late", user: "carol", at: 1, expires: 900_000)
        #expect(try await store.hold(held(late), until: 100, appID: nil) == .accepted)
        try await store.saveDevice(StoreFixtures.device("c1", user: "carol"))
        let tooLate = HeldRelease(messageID: "m-late", pushes: [StoreFixtures.push("late", device: "c1", at: 100)])
        #expect(try await store.release([tooLate], now: 100).isEmpty)
        #expect(try await store.push(id: "late") == nil)
    }

    /// Holds end at their time (`endHolds` counts them; their messages stay for retention) and
    /// survive a restart; an app keeps its policy for such messages, or none (the relay's).
    public static func heldMessagesEndAndAppsKeepTheirPolicy(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let short = StoreFixtures.message("m-short", user: "alice", at: 1, expires: 900_000)
        let long = StoreFixtures.message("m-long", user: "alice", at: 2, expires: 900_000)
        #expect(try await store.hold(held(short), until: 100, appID: nil) == .accepted)
        #expect(try await store.hold(held(long), until: 1_000, appID: StoreFixtures.appID) == .accepted)

        let restarted = try await engine.open(storage)
        #expect(try await restarted.heldMessages(userID: "alice", now: 0).map(\.messageID) == ["m-short", "m-long"])
        #expect(try await restarted.endHolds(now: 99) == 0)
        #expect(try await restarted.endHolds(now: 100) == 1)
        #expect(
            try await restarted.heldMessages(userID: "alice", now: 0)
                == [
                    HeldMessage(
                        messageID: "m-long",
                        userID: "alice",
                        appID: StoreFixtures.appID,
                        heldAt: 2,
                        heldUntil: 1_000
                    )
                ]
        )
        #expect(try await restarted.message(id: "m-short") == short)

        var refusing = AppRecord(id: "com.example.refusing", teamID: "TEAM123456")
        refusing.undeliverable = .refuse
        refusing.holdFor = 60
        try await store.saveApp(refusing)
        var holding = AppRecord(id: "com.example.holding", teamID: "TEAM123456")
        holding.undeliverable = .hold
        try await store.saveApp(holding)
        #expect(try await restarted.app(id: refusing.id) == refusing)
        #expect(try await restarted.app(id: holding.id) == holding)
        #expect(try await restarted.app(id: StoreFixtures.appID)?.undeliverable == nil)
        #expect(try await restarted.app(id: StoreFixtures.appID)?.holdFor == nil)
    }

    /// A held message's ingest: its message and key, no pushes.
    private static func held(_ message: MessageRecord, key: String? = nil, receipt: [UInt8] = []) -> Ingest {
        StoreFixtures.ingest([], key: key, message: message, receipt: receipt)
    }
}
