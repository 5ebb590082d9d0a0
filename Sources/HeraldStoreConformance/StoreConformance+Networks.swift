import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// A claim for some networks takes only their pushes, in the usual order; the others stay
    /// as they are (queued, no attempt counted, not even finished when expired). No networks:
    /// nothing is claimed.
    public static func claimsOnlyTheNetworksAsked(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        try await store.saveDevice(StoreFixtures.androidDevice("a1", token: "fcm-a1"))
        let pushes = [
            StoreFixtures.push("apns-call", device: "d1", kind: .call, at: 1, expires: 50),
            StoreFixtures.push("apns-message", device: "d1", at: 2, expires: 10_000),
            StoreFixtures.fcmPush("fcm-message", device: "a1", at: 3, expires: 10_000),
            StoreFixtures.fcmPush("fcm-call", device: "a1", kind: .call, at: 4, expires: 10_000),
        ]
        _ = try await store.accept(StoreFixtures.ingest(pushes))

        #expect(try await store.claim(limit: 10, owner: "w", now: 100, leaseUntil: 1000, networks: []).isEmpty)
        let fcm = try await store.claim(limit: 10, owner: "w", now: 100, leaseUntil: 1000, networks: [.fcm])
        #expect(fcm.map(\.entry.pushID) == ["fcm-call", "fcm-message"])
        // The APNs pushes were not touched: the expired call is still queued, neither counted.
        for id in ["apns-call", "apns-message"] {
            let entry = try #require(try await store.push(id: id))
            #expect(entry.state == .queued && entry.attempts == 0, "\(id): \(entry)")
        }
        #expect(try await store.deliveryLog(pushID: "apns-call").map(\.state) == [.queued])
        // Asked for APNs, one at a time: the expired call is finished on the way, the message taken.
        let apns = try await store.claim(limit: 1, owner: "w", now: 100, leaseUntil: 1000, networks: [.apns])
        let taken = try await store.claim(limit: 1, owner: "w", now: 100, leaseUntil: 1000, networks: [.apns])
        #expect((apns + taken).map(\.entry.pushID) == ["apns-message"])
        #expect(try await store.push(id: "apns-call")?.state == .expired)
        #expect(try await claimIDs(store, now: 100) == [])
    }

    /// `requeue` puts a claimed push back in the queue, due at the given time, with the reason
    /// logged, as if the claim had not counted: its attempts are what they were before it. The
    /// next claim counts one again.
    public static func requeueTakesBackTheAttempt(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        _ = try await store.accept(StoreFixtures.ingest([StoreFixtures.push("p", device: "d1", at: 1)]))
        for round in 0..<3 {
            let now = Int64(10 + round * 10)
            #expect(try await claimIDs(store, owner: "w", now: now) == ["p"])
            try await store.complete(
                [
                    PushCompletion(
                        pushID: "p",
                        disposition: .requeue(at: now + 5),
                        reason: "APNs unreachable",
                        deadToken: nil
                    )
                ],
                now: now + 1
            )
            let entry = try #require(try await store.push(id: "p"))
            #expect(entry.state == .queued && entry.attempts == 0 && entry.nextAttemptAt == now + 5, "\(entry)")
            #expect(entry.lastReason == "APNs unreachable" && entry.updatedAt == now + 1)
        }
        let log = try await store.deliveryLog(pushID: "p")
        #expect(
            log == [
                DeliveryEvent(pushID: "p", at: 1, state: .queued, reason: nil),
                DeliveryEvent(pushID: "p", at: 11, state: .queued, reason: "APNs unreachable"),
                DeliveryEvent(pushID: "p", at: 21, state: .queued, reason: "APNs unreachable"),
                DeliveryEvent(pushID: "p", at: 31, state: .queued, reason: "APNs unreachable"),
            ],
            "\(log)"
        )
        #expect(try await store.nextDueTime() == 35)
        #expect(try await claimIDs(store, now: 34) == [])
        let again = try await engine.open(storage).claim(limit: 10, owner: "w", now: 35, leaseUntil: 1000)
        #expect(again.map(\.entry.attempts) == [1])
    }
}
