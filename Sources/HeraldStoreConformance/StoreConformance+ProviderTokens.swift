import HeraldStore
import Testing

extension StoreConformance {
    /// A key has no token until one is stored with `replacing: nil`; a replacement needs the
    /// version the caller saw, and a caller that saw an older one (or none, when one exists) loses
    /// and is given the stored token. Keys are apart, and the token is the same from a second
    /// store on the same data (another node, or a restart).
    public static func providerTokensCompareAndSet(_ engine: some StoreEngine) async throws {
        let storage = try await engine.makeStorage()
        let store = try await engine.open(storage)
        #expect(try await store.providerToken(teamID: "TEAM", keyID: "KEY1") == nil)

        let first = try await store.replaceProviderToken(
            teamID: "TEAM",
            keyID: "KEY1",
            sealedToken: [1, 2, 3],
            issuedAt: 1_000,
            replacing: nil
        )
        let stored = ProviderTokenRecord(
            teamID: "TEAM",
            keyID: "KEY1",
            version: 1,
            sealedToken: [1, 2, 3],
            issuedAt: 1_000
        )
        #expect(first == .replaced(stored))
        #expect(try await store.providerToken(teamID: "TEAM", keyID: "KEY1") == stored)
        // Another key, and the same key id in another team, have none.
        #expect(try await store.providerToken(teamID: "TEAM", keyID: "KEY2") == nil)
        #expect(try await store.providerToken(teamID: "OTHER", keyID: "KEY1") == nil)

        // "None stored" is stale now: lost, and told what is stored.
        let late = try await store.replaceProviderToken(
            teamID: "TEAM",
            keyID: "KEY1",
            sealedToken: [9],
            issuedAt: 2_000,
            replacing: nil
        )
        #expect(late == .lost(current: stored))

        let second = try await store.replaceProviderToken(
            teamID: "TEAM",
            keyID: "KEY1",
            sealedToken: [4, 5],
            issuedAt: 3_000,
            replacing: 1
        )
        let replaced = ProviderTokenRecord(
            teamID: "TEAM",
            keyID: "KEY1",
            version: 2,
            sealedToken: [4, 5],
            issuedAt: 3_000
        )
        #expect(second == .replaced(replaced))
        // Version 1 is stale now.
        let stale = try await store.replaceProviderToken(
            teamID: "TEAM",
            keyID: "KEY1",
            sealedToken: [6],
            issuedAt: 4_000,
            replacing: 1
        )
        #expect(stale == .lost(current: replaced))
        // A version named while none is stored loses, with nothing to adopt.
        let unknown = try await store.replaceProviderToken(
            teamID: "TEAM",
            keyID: "KEY3",
            sealedToken: [7],
            issuedAt: 4_000,
            replacing: 4
        )
        #expect(unknown == .lost(current: nil))
        #expect(try await store.providerToken(teamID: "TEAM", keyID: "KEY3") == nil)

        let other = try await engine.open(storage)
        #expect(try await other.providerToken(teamID: "TEAM", keyID: "KEY1") == replaced)
    }

    /// Several stores on the same data (nodes of a cluster) replacing the same version at once:
    /// exactly one wins, and every loser is given the winner's token. The same for the first
    /// token of a key.
    public static func providerTokenRacesHaveOneWinner(_ engine: some StoreEngine) async throws {
        let storage = try await engine.makeStorage()
        var stores: [any HeraldStore] = []
        for _ in 0..<4 { stores.append(try await engine.open(storage)) }
        for round in 0..<3 {
            let expected: Int64? = round == 0 ? nil : Int64(round)
            let outcomes = try await withThrowingTaskGroup(of: ProviderTokenSwap.self) { group in
                for (index, store) in stores.enumerated() {
                    for writer in 0..<2 {
                        group.addTask {
                            try await store.replaceProviderToken(
                                teamID: "TEAM",
                                keyID: "KEY1",
                                sealedToken: [UInt8(round), UInt8(index), UInt8(writer)],
                                issuedAt: Int64(round * 1_000 + index),
                                replacing: expected
                            )
                        }
                    }
                }
                var outcomes: [ProviderTokenSwap] = []
                for try await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
            let winners = outcomes.compactMap { outcome -> ProviderTokenRecord? in
                if case .replaced(let record) = outcome { return record }
                return nil
            }
            #expect(winners.count == 1, "round \(round): \(outcomes)")
            let winner = try #require(winners.first)
            #expect(winner.version == Int64(round + 1))
            for outcome in outcomes {
                #expect(outcome.stored == winner, "round \(round): \(outcome) is not the winner's \(winner)")
            }
            for store in stores {
                #expect(try await store.providerToken(teamID: "TEAM", keyID: "KEY1") == winner)
            }
        }
    }
}
