import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// The queue order (`OutboxStore.claim`): calls first, then by `queuedSince`. A push of an app
    /// ordered by the customer's wait carries `waitingSince` (the relay sets it) and is claimed by
    /// it: queued later with an older wait, it goes before; a push without one (an app ordered
    /// by time in the queue) keeps its acceptance time, so such an app's order is unchanged. The
    /// same order holds when only one network is claimed, `limit` takes the first in it, and a
    /// retry keeps the push's place.
    public static func customerWaitOrdersTheQueue(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        try await store.saveDevice(StoreFixtures.androidDevice("d2", user: "u2", token: "fcm-d2"))
        func waiting(_ push: OutboxEntry, since: Int64) -> OutboxEntry {
            var push = push
            push.waitingSince = since
            return push
        }
        let pushes = [
            // An app ordered by time in the queue: no wait, by acceptance.
            StoreFixtures.push("q-10", device: "d1", at: 10),
            StoreFixtures.push("q-40", device: "d1", at: 40),
            // An app ordered by the customer's wait: queued late, waited long.
            waiting(StoreFixtures.push("w-50-since-5", device: "d1", at: 50), since: 5),
            waiting(StoreFixtures.push("w-30-since-20", device: "d1", at: 30), since: 20),
            waiting(StoreFixtures.push("w-60-since-60", device: "d1", at: 60), since: 60),
            // Calls are first, whatever the messages' waits.
            StoreFixtures.push("c-70", device: "d1", kind: .call, at: 70),
            waiting(StoreFixtures.fcmPush("f-55-since-1", device: "d2", at: 55, expires: 1_000_000), since: 1),
        ]
        _ = try await store.accept(StoreFixtures.ingest(pushes))
        #expect(try await store.push(id: "w-50-since-5")?.waitingSince == 5)
        #expect(try await store.push(id: "q-10")?.waitingSince == nil)

        // One network: the same order among its pushes, `limit` the first of them.
        let apns = try await store.claim(limit: 3, owner: "w", now: 100, leaseUntil: 1_000, networks: [.apns])
        #expect(apns.map(\.entry.pushID) == ["c-70", "w-50-since-5", "q-10"])
        #expect(apns.map(\.entry.waitingSince) == [nil, 5, nil])
        // A retry keeps its place in the queue: its wait did not end.
        try await store.complete(
            [PushCompletion(pushID: "w-50-since-5", disposition: .retry(at: 100), reason: "busy", deadToken: nil)],
            now: 100
        )
        #expect(
            try await claimIDs(store, limit: 100, now: 100)
                == ["f-55-since-1", "w-50-since-5", "w-30-since-20", "q-40", "w-60-since-60"]
        )
    }

    /// A "now or never" push keeps its flag through the store: read back, claimed, and as the
    /// push the dispatcher sends (expiration 0 on the wire rather than the end of its window).
    public static func nowOrNeverTravelsWithThePush(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        var once = StoreFixtures.push("once", device: "d1", at: 10, expires: 10_010)
        once.nowOrNever = true
        let kept = StoreFixtures.push("kept", device: "d1", at: 11, expires: 90_000)
        _ = try await store.accept(StoreFixtures.ingest([once, kept]))
        #expect(try await store.push(id: "once") == once)
        #expect(try await store.push(id: "kept")?.nowOrNever == false)
        let claimed = try await store.claim(limit: 10, owner: "w", now: 20, leaseUntil: 1_000)
        let pushes = Dictionary(uniqueKeysWithValues: claimed.map { ($0.entry.pushID, $0) })
        #expect(pushes["once"]?.entry.nowOrNever == true)
        #expect(pushes["once"]?.push.expiration == 0)
        #expect(pushes["kept"]?.push.expiration == 90)
    }
}
