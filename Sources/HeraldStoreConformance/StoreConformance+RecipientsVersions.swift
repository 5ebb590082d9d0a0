import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// An ingest made for recipients that changed since they were read (a device added, its
    /// token changed, a heartbeat, a live channel published or removed, a device deleted: on
    /// any node) writes nothing, its key included, and is answered `stale`; made again from what
    /// is read then, it is accepted. An engine whose recipients for an ingest come with no
    /// version reads them afresh each time: there, what it reads after a change shows it.
    public static func staleRecipientsAreRefused(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let otherNode = try await engine.open(storage)
        try await store.saveDevice(StoreFixtures.device("d1", createdAt: 1))
        let changes: [(String, () async throws -> Void)] = [
            ("a device added", { try await otherNode.saveDevice(StoreFixtures.device("d2", createdAt: 2)) }),
            (
                "a token changed",
                { _ = try await otherNode.updateTokens(deviceID: "d1", messaging: "t2", voip: nil, now: 5) }
            ),
            (
                "a heartbeat",
                {
                    try await otherNode.savePresence(
                        PresenceRecord(
                            deviceID: "d1",
                            userID: "u",
                            conversation: "c1",
                            state: .active,
                            updatedAt: 6,
                            expiresAt: 60_006
                        )
                    )
                }
            ),
            (
                "a live channel published",
                {
                    try await otherNode.saveLiveSession(
                        LiveSessionRecord(
                            deviceID: "d2",
                            nodeID: "b",
                            sessionID: "s1",
                            conversation: nil,
                            expiresAt: 9_000
                        )
                    )
                }
            ),
            ("a live channel removed", { try await otherNode.removeLiveSession(deviceID: "d2", sessionID: "s1") }),
            ("a device deleted", { _ = try await otherNode.deleteDevice(id: "d2") }),
        ]
        for (index, (change, make)) in changes.enumerated() {
            let before = try await store.recipientsForIngest(userID: "u")
            // Unchanged, a second read gives the same recipients and version.
            #expect(try await store.recipientsForIngest(userID: "u") == before, "\(change)")
            try await make()
            let push = StoreFixtures.push("p\(index)", device: "d1", at: Int64(10 + index))
            var ingest = StoreFixtures.ingest([push], key: "k\(index)", receipt: [UInt8(index)])
            ingest.recipientsVersion = before.version
            if before.version != nil {
                #expect(try await store.accept(ingest) == .stale, "\(change)")
                #expect(try await store.push(id: push.pushID) == nil, "\(change)")
            }
            let after = try await store.recipientsForIngest(userID: "u")
            #expect(after.recipients == (try await otherNode.recipients(userID: "u")), "\(change)")
            #expect(after.recipients != before.recipients, "\(change)")
            if let version = before.version { #expect(after.version != version, "\(change)") }
            // The key was not written: made again for what is read now, the ingest is accepted.
            ingest.recipientsVersion = after.version
            #expect(try await store.accept(ingest) == .accepted, "\(change)")
            #expect(try await otherNode.push(id: push.pushID)?.pushID == push.pushID, "\(change)")
        }
        // A user without devices: whatever it answers, an ingest for it made now is accepted.
        let nobody = try await store.recipientsForIngest(userID: "nobody")
        #expect(nobody.recipients.isEmpty)
        var ingest = StoreFixtures.ingest([], key: "k-nobody", receipt: [1])
        ingest.recipientsVersion = nobody.version
        #expect(try await store.accept(ingest) == .accepted)
    }
}
