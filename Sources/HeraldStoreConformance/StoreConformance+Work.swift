import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// The store's work through `apply`: each piece answers its own kind (`answered`) with the
    /// rows it took or how many it changed; a batch that mixes work with other changes is refused
    /// (`StoreError.invalid`) and writes nothing, its other changes included; a disconnect is
    /// removed only while it is the one the caller read (`stale` once it was marked pushed).
    public static func storeWorkIsAppliedAlone(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1", createdAt: 1))
        let ingest = StoreFixtures.ingest([StoreFixtures.push("p1", device: "d1", kind: .message, at: 10)], key: "k1")
        let lease = StoreWork.Lease(owner: "w1", now: 100, until: 200, limit: 10)
        await #expect(throws: StoreError.invalid) {
            try await store.apply([.accept(ingest), .work(.claimPushes(lease, networks: Set(PushNetwork.allCases)))])
        }
        #expect(try await store.push(id: "p1") == nil)
        #expect(try await store.apply([.accept(ingest)]) == [.applied])

        let answers = try await store.apply([.work(.claimPushes(lease, networks: Set(PushNetwork.allCases)))])
        guard case .answered(.pushes(let claimed)) = answers.first else {
            Issue.record("a claim answered \(answers)")
            return
        }
        #expect(claimed.map(\.entry.pushID) == ["p1"])
        #expect(try await store.apply([.work(.releaseClaims(owner: "w1", now: 150))]) == [.answered(.count(1))])
        #expect(try await store.apply([.work(.takeCallStops(nodeID: "n1"))]) == [.answered(.callStops([]))])
        #expect(
            try await store.apply([.work(.deleteExpired(now: 0, historyBefore: 0))])
                == [.answered(.expired(messages: 0, pushes: 0))]
        )

        let read = ChatDisconnect(deviceID: "d1", conversation: "chat-1", position: 2, at: 50)
        try await store.saveDisconnect(read)
        try await store.markDisconnectPushed(deviceID: "d1", conversation: "chat-1")
        #expect(try await store.apply([.removeDisconnect(read, events: [])]) == [.stale])
        var marked = read
        marked.pushed = true
        #expect(try await store.disconnects(conversation: "chat-1") == [marked])
        #expect(try await store.apply([.removeDisconnect(marked, events: [])]) == [.applied])
        #expect(try await store.disconnects(conversation: "chat-1").isEmpty)
    }
}
