import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// The pushes an ingest names in `Ingest.claim` are written claimed by their node: `sending`,
    /// one attempt counted, held through the lease against every other claimer (another node's
    /// included) and not claimed again by their own; the others are queued as usual. Once the
    /// lease ends another node takes one as a second attempt; a completion finishes one; a
    /// restarted owner puts its back; a repeated key writes nothing, claimed or not; a call's
    /// ingest honours the claim too.
    public static func ingestClaimsAreHeldByTheirNode(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let otherNode = try await engine.open(storage)
        try await store.saveDevice(StoreFixtures.device("d1"))
        let pushes = ["a", "b", "c"].enumerated().map { StoreFixtures.push($1, device: "d1", at: Int64($0)) }
        var ingest = StoreFixtures.ingest(pushes, key: "k1", receipt: [9])
        ingest.claim = IngestClaim(owner: "node-1", leaseUntil: 5_000, pushIDs: ["a", "b"])
        #expect(try await store.accept(ingest) == .accepted)

        let a = try #require(try await otherNode.push(id: "a"))
        #expect(a.state == .sending && a.attempts == 1)
        #expect(try await otherNode.push(id: "b")?.state == .sending)
        let c = try #require(try await otherNode.push(id: "c"))
        #expect(c.state == .queued && c.attempts == 0)
        let counts = try await otherNode.outboxCounts()
        #expect(counts[.sending] == 2 && counts[.queued] == 1)

        #expect(try await claimIDs(otherNode, owner: "node-2", now: 100, leaseUntil: 9_000) == ["c"])
        #expect(
            try await claimIDs(store, owner: "node-1", now: 200, leaseUntil: 9_000) == [],
            "held, not claimed again"
        )
        #expect(try await claimIDs(otherNode, owner: "node-3", now: 5_000, leaseUntil: 9_000) == [], "held through")

        try await store.complete(
            [PushCompletion(pushID: "a", disposition: .finish(.delivered), reason: nil, deadToken: nil)],
            now: 300
        )
        #expect(try await otherNode.push(id: "a")?.state == .delivered)

        // The node died: after its lease, another node takes what it had not finished.
        let again = try await otherNode.claim(limit: 10, owner: "node-2", now: 5_001, leaseUntil: 9_000)
        #expect(again.map(\.entry.pushID) == ["b"])
        #expect(again.first?.entry.attempts == 2)
        #expect(again.first?.deviceToken == "aad1")

        // A repeated key writes nothing, whatever it claims.
        var repeated = StoreFixtures.ingest([StoreFixtures.push("d", device: "d1", at: 10)], key: "k1", receipt: [8])
        repeated.claim = IngestClaim(owner: "node-1", leaseUntil: 1_000_000, pushIDs: ["d"])
        #expect(try await otherNode.accept(repeated) == .duplicate(receipt: [9]))
        #expect(try await store.push(id: "d") == nil)

        // A restarted owner puts back what it held.
        var held = StoreFixtures.ingest([StoreFixtures.push("e", device: "d1", at: 20)])
        held.claim = IngestClaim(owner: "node-1", leaseUntil: 1_000_000, pushIDs: ["e"])
        #expect(try await store.accept(held) == .accepted)
        let restarted = try await engine.open(storage)
        #expect(try await restarted.releaseClaims(owner: "node-1", now: 30) == 1)
        #expect(try await restarted.push(id: "e")?.state == .queued)
        #expect(try await claimIDs(otherNode, owner: "node-2", now: 40) == ["e"])

        // A call's ingest: its pushes written claimed too, with the call.
        try await store.saveDevice(StoreFixtures.device("d2"))
        var call = Ingest(
            idempotencyKey: "call:call-9",
            message: nil,
            pushes: [StoreFixtures.push("v1", device: "d1", kind: .call, at: 50)],
            receipt: [7]
        )
        call.claim = IngestClaim(owner: "node-1", leaseUntil: 1_000_000, pushIDs: ["v1"])
        #expect(try await store.acceptCall(call, call: callRecord("call-9", devices: ["d1"], at: 50)) == .accepted)
        #expect(try await otherNode.push(id: "v1")?.state == .sending)
        #expect(try await claimIDs(otherNode, owner: "node-2", now: 60) == [])
        #expect(try await otherNode.call(id: "call-9") != nil)
    }
}
