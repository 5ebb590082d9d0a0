import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// Four workers on two stores sharing the storage (two nodes) drain 400 pushes: each push is
    /// claimed exactly once.
    public static func claimsAreExclusive(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let otherNode = try await engine.open(storage)
        try await store.saveDevice(StoreFixtures.device("d1"))
        let pushes = (0..<400).map { StoreFixtures.push("p\($0)", device: "d1", at: Int64($0)) }
        #expect(try await store.accept(StoreFixtures.ingest(pushes)) == .accepted)
        let nodes = [store, otherNode]
        let claimed = try await withThrowingTaskGroup(of: [ClaimedPush].self) { group in
            for worker in 0..<4 {
                let node = nodes[worker % 2]
                group.addTask {
                    var mine: [ClaimedPush] = []
                    // Bounded, so an engine that hands the same pushes out again fails the counts
                    // below instead of spinning.
                    for _ in 0..<pushes.count {
                        let batch = try await node.claim(limit: 7, owner: "w\(worker)", now: 1000, leaseUntil: 9000)
                        if batch.isEmpty { break }
                        mine += batch
                    }
                    return mine
                }
            }
            var all: [ClaimedPush] = []
            for try await part in group { all += part }
            return all
        }
        #expect(claimed.count == 400)
        #expect(Set(claimed.map(\.entry.pushID)) == Set(pushes.map(\.pushID)))
        #expect(claimed.allSatisfy { $0.entry.state == .sending && $0.entry.attempts == 1 })
        #expect(try await store.outboxCounts()[.sending] == 400)
        #expect(try await otherNode.outboxCounts()[.queued] == 0)
    }

    /// A claim holds through `leaseUntil`; after it, another worker (on another node) takes the
    /// push again, as a new attempt. Other claims keep their own leases.
    public static func leasesLapseAndComeBack(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let otherNode = try await engine.open(storage)
        try await store.saveDevice(StoreFixtures.device("d1"))
        let pushes = [StoreFixtures.push("a", device: "d1", at: 0), StoreFixtures.push("b", device: "d1", at: 1)]
        _ = try await store.accept(StoreFixtures.ingest(pushes))
        #expect(try await claimIDs(store, limit: 1, owner: "w1", now: 10, leaseUntil: 20) == ["a"])
        #expect(try await claimIDs(store, limit: 1, owner: "w2", now: 11, leaseUntil: 5000) == ["b"])
        #expect(try await claimIDs(otherNode, owner: "w3", now: 20, leaseUntil: 5000) == [], "held through its lease")

        let again = try await otherNode.claim(limit: 5, owner: "w3", now: 21, leaseUntil: 5000)
        #expect(again.map(\.entry.pushID) == ["a"])
        #expect(again.first?.entry.attempts == 2)
        #expect(again.first?.entry.state == .sending)
        #expect(again.first?.deviceToken == "aad1")
        #expect(try await store.push(id: "b")?.state == .sending)
        #expect(try await claimIDs(store, owner: "w1", now: 22, leaseUntil: 5000) == [], "w3 holds it now")
        let counts = try await store.outboxCounts()
        #expect(counts[.sending] == 2 && counts[.queued] == 0)
    }

    /// A restarted owner (a new store on the same storage) puts back every push it had claimed,
    /// due at once, and nobody else's.
    public static func releaseClaimsOfARestartedOwner(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        let pushes = (0..<3).map { StoreFixtures.push(["a", "b", "c"][$0], device: "d1", at: Int64($0)) }
        _ = try await store.accept(StoreFixtures.ingest(pushes))
        #expect(try await claimIDs(store, limit: 2, owner: "node-1", now: 10, leaseUntil: 1_000_000) == ["a", "b"])
        #expect(try await claimIDs(store, limit: 1, owner: "node-2", now: 11, leaseUntil: 1_000_000) == ["c"])

        let restarted = try await engine.open(storage)
        #expect(try await restarted.releaseClaims(owner: "node-1", now: 40) == 2)
        #expect(try await restarted.push(id: "a")?.state == .queued)
        #expect(try await restarted.push(id: "b")?.state == .queued)
        #expect(try await restarted.push(id: "c")?.state == .sending)
        #expect(try await restarted.releaseClaims(owner: "node-1", now: 41) == 0)
        #expect(try await restarted.releaseClaims(owner: "nobody", now: 41) == 0)
        #expect(try await restarted.nextDueTime() == 0)

        // Long before their lease would have ended.
        let again = try await restarted.claim(limit: 5, owner: "node-1", now: 42, leaseUntil: 2000)
        #expect(again.map(\.entry.pushID) == ["a", "b"])
        #expect(again.map(\.entry.attempts) == [2, 2])
    }

    /// Calls before messages, then the longest waiting since acceptance (not since the last
    /// attempt) first; `limit` takes the first in that order, and the batch comes in it.
    public static func callsFirstThenLongestWait(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        try await store.saveDevice(StoreFixtures.device("d2"))
        var retried = StoreFixtures.push("m-retried", device: "d2", at: 5)
        retried.nextAttemptAt = 50
        let pushes = [
            StoreFixtures.push("m-late", device: "d1", at: 30),
            StoreFixtures.push("m-early", device: "d2", at: 10),
            StoreFixtures.push("c-late", device: "d1", kind: .call, at: 40),
            StoreFixtures.push("c-early", device: "d2", kind: .call, at: 35),
            retried,
            StoreFixtures.push("m-future", device: "d1", at: 500),
        ]
        _ = try await store.accept(StoreFixtures.ingest(pushes))

        let first = try await store.claim(limit: 3, owner: "w", now: 100, leaseUntil: 1000)
        #expect(first.map(\.entry.pushID) == ["c-early", "c-late", "m-retried"])
        #expect(first.allSatisfy { $0.entry.state == .sending && $0.entry.attempts == 1 })
        #expect(try await claimIDs(store, limit: 3, now: 100) == ["m-early", "m-late"])
        #expect(try await claimIDs(store, limit: 3, now: 100) == [])
        #expect(try await store.nextDueTime() == 500)
        #expect(try await claimIDs(store, now: 500) == ["m-future"])
    }

    /// Pushes past their expiration, and pushes whose device is gone or has no token for them,
    /// are finished when claimed, with the reason, not returned, and count no attempt.
    public static func expiredAndTokenlessPushesAreFinished(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        var tokenless = StoreFixtures.device("d-none")
        tokenless.messagingToken = nil
        tokenless.voipToken = nil
        try await store.saveDevice(tokenless)
        var dead = StoreFixtures.device("d-dead")
        dead.messagingToken = nil
        dead.tokenDeadReason = "Unregistered"
        try await store.saveDevice(dead)
        var noVoIP = StoreFixtures.device("d-novoip")
        noVoIP.voipToken = nil
        try await store.saveDevice(noVoIP)
        let pushes = [
            StoreFixtures.push("ok", device: "d1", at: 1),
            StoreFixtures.push("expired", device: "d1", at: 1, expires: 50),
            StoreFixtures.push("expiring-now", device: "d1", kind: .call, at: 1, expires: 100),
            StoreFixtures.push("gone", device: "nobody", at: 1),
            StoreFixtures.push("no-token", device: "d-none", at: 1),
            StoreFixtures.push("dead", device: "d-dead", at: 1),
            StoreFixtures.push("call-no-voip", device: "d-novoip", kind: .call, at: 1),
        ]
        _ = try await store.accept(StoreFixtures.ingest(pushes))

        #expect(try await claimIDs(store, now: 100) == ["ok"])
        let finished: [(String, PushState, String)] = [
            ("expired", .expired, "expired before sending"),
            ("expiring-now", .expired, "expired before sending"),
            ("gone", .skipped, "device_deactivated"),
            ("no-token", .skipped, "no_token"),
            ("dead", .skipped, "token_dead: Unregistered"),
            ("call-no-voip", .skipped, "no_token"),
        ]
        for (id, state, reason) in finished {
            let entry = try #require(try await store.push(id: id), "\(id)")
            #expect(entry.state == state, "\(id)")
            #expect(entry.lastReason == reason, "\(id)")
            #expect(entry.attempts == 0, "\(id)")
            #expect(entry.updatedAt == 100, "\(id)")
        }
        #expect(try await store.deliveryLog(pushID: "expired").map(\.state) == [.queued, .expired])
        #expect(try await claimIDs(store, now: 200) == [])
        let counts = try await store.outboxCounts()
        #expect(counts[.expired] == 2 && counts[.skipped] == 4 && counts[.sending] == 1 && counts[.queued] == 0)
    }

    /// VoIP pushes go to the PushKit token, the others (alerts, FCM messages and calls) to the
    /// messaging token, each read when the push is claimed; the push to send carries the payload,
    /// the collapse id and the expiration in seconds.
    public static func voipToPushKitTokenOthersToMessagingToken(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1", token: "msg", voip: "voip"))
        try await store.saveDevice(StoreFixtures.androidDevice("a1", token: "fcm-a1"))
        var message = StoreFixtures.push("m1", device: "d1", at: 3, expires: 90_500)
        message.collapseID = "conversation-1"
        let pushes = [
            StoreFixtures.push("c1", device: "d1", kind: .call, at: 1, expires: 31_999),
            StoreFixtures.fcmPush("fc1", device: "a1", kind: .call, at: 2),
            message,
            StoreFixtures.fcmPush("fm1", device: "a1", at: 4),
        ]
        _ = try await store.accept(StoreFixtures.ingest(pushes))
        // Tokens are read when the push is claimed: the one set after acceptance is used.
        _ = try await store.updateTokens(deviceID: "d1", messaging: "msg-2", voip: nil, now: 5)

        let claimed = try await store.claim(limit: 10, owner: "w", now: 10, leaseUntil: 100)
        #expect(
            claimed.map { [$0.entry.pushID, $0.deviceToken] } == [
                ["c1", "voip"], ["fc1", "fcm-a1"], ["m1", "msg-2"], ["fm1", "fcm-a1"],
            ]
        )
        let tokens = ["c1": "voip", "fc1": "fcm-a1", "m1": "msg-2", "fm1": "fcm-a1"]
        let expected = pushes.map { entry in
            Push(
                id: entry.pushID,
                token: tokens[entry.pushID] ?? "",
                payload: entry.payload,
                expiration: entry.expiresAt / 1000,
                collapseID: entry.collapseID
            )
        }
        #expect(Set(claimed.map(\.push)) == Set(expected))
        #expect(claimed.first { $0.entry.pushID == "m1" }?.push.collapseID == "conversation-1")
        #expect(claimed.first { $0.entry.pushID == "c1" }?.push.expiration == 31)
    }
}
