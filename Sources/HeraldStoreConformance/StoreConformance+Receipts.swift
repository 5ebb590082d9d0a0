import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// A receipt is written once per push and stage, with its events, and read back by every
    /// store in the order of the stages; the same stage again is `duplicate` and writes no event;
    /// a receipt for an unknown push is `stale`; the listing shows the furthest stage; retention
    /// deletes a push's receipts with it.
    public static func receiptsAreRecordedOncePerStage(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        #expect(
            try await store.accept(StoreFixtures.ingest([StoreFixtures.push("p", device: "d1", at: 100)])) == .accepted
        )
        _ = try await claimIDs(store, now: 100)
        try await store.complete(
            [PushCompletion(pushID: "p", disposition: .finish(.delivered), reason: nil, deadToken: nil)],
            now: 150
        )
        let shown = PushReceipt(pushID: "p", stage: .shown, deviceTime: 190, receivedAt: 200, failure: nil)
        let delivered = PushReceipt(pushID: "p", stage: .delivered, deviceTime: 180, receivedAt: 201, failure: nil)
        let event = subjectEvent("e-shown", .pushShown, subject: "push", "p", at: 200)
        #expect(try await store.apply(.recordReceipt(shown, events: [event])) == .applied)
        #expect(try await store.apply(.recordReceipt(delivered, events: [])) == .applied)

        // The same stage again, even with other times: nothing written, no second event.
        var again = shown
        again.deviceTime = 999
        let second = subjectEvent("e-shown-2", .pushShown, subject: "push", "p", at: 300)
        #expect(try await store.apply(.recordReceipt(again, events: [second])) == .duplicate)
        #expect(try await store.webhookEvent(id: "e-shown") != nil)
        #expect(try await store.webhookEvent(id: "e-shown-2") == nil)

        let ghost = PushReceipt(pushID: "ghost", stage: .failed, deviceTime: 1, receivedAt: 2, failure: .tampered)
        #expect(try await store.apply(.recordReceipt(ghost, events: [])) == .stale)
        #expect(try await store.receipts(pushID: "ghost") == [])

        let other = try await engine.open(storage)
        #expect(try await other.receipts(pushID: "p") == [delivered, shown])
        #expect(try await other.pushes(matching: PushQuery(deviceID: "d1")).pushes.map(\.deviceStage) == [.shown])
        #expect(try await other.pushes(matching: PushQuery(deviceID: "nobody")).pushes.isEmpty)

        _ = try await other.deleteExpired(now: 1_000, historyBefore: 500)
        #expect(try await other.push(id: "p") == nil)
        #expect(try await other.receipts(pushID: "p") == [])
    }
}
