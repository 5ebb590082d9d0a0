import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// A key is stored once under its id (a second insert with the id writes nothing), read back
    /// as stored from another store on the same data, and revoked once (the first time stays).
    /// The audit log reads newest first and pages with `before`.
    public static func apiKeysAndTheAuditLog(_ engine: some StoreEngine) async throws {
        let storage = try await engine.makeStorage()
        let store = try await engine.open(storage)
        #expect(try await store.apiKeys().isEmpty)

        let app = APIKeyRecord(
            id: "00000000000000a1",
            name: "crm",
            appID: "com.example.chat",
            scopes: [.send, .read],
            secretDigest: Array(repeating: 7, count: 32),
            ratePerSecond: 12.5,
            burst: 40,
            createdAt: 1_000
        )
        let admin = APIKeyRecord(
            id: "00000000000000b2",
            name: "ops",
            appID: nil,
            scopes: Set(APIScope.allCases),
            secretDigest: Array(repeating: 9, count: 32),
            createdAt: 2_000
        )
        #expect(try await store.insertAPIKey(app))
        #expect(try await store.insertAPIKey(admin))
        var taken = admin
        taken.name = "another"
        #expect(try await store.insertAPIKey(taken) == false)

        let other = try await engine.open(storage)
        #expect(try await other.apiKeys() == [app, admin])

        #expect(try await store.revokeAPIKey(id: app.id, at: 5_000))
        #expect(try await other.revokeAPIKey(id: app.id, at: 6_000) == false)
        #expect(try await store.revokeAPIKey(id: "ffffffffffffffff", at: 6_000) == false)
        var revoked = app
        revoked.revokedAt = 5_000
        #expect(try await other.apiKeys() == [revoked, admin])

        let entries = (1...5).map {
            AuditEntry(
                id: "audit-\($0)",
                at: Int64($0) * 1_000,
                actor: $0 == 3 ? "cli" : "key:\(app.id)",
                action: "app.saved",
                target: "com.example.chat",
                appID: $0 == 3 ? nil : "com.example.chat"
            )
        }
        for entry in entries { try await store.appendAudit(entry) }
        #expect(try await other.auditEntries(before: nil, limit: 2) == [entries[4], entries[3]])
        #expect(try await other.auditEntries(before: "audit-4", limit: 10) == Array(entries[0..<3].reversed()))
        #expect(try await other.auditEntries(before: "audit-1", limit: 10).isEmpty)
    }
}

extension StoreConformance {
    /// `queuedMessages(appID:)` counts the message pushes of one app's devices still queued: not
    /// another app's, not calls, not a push a dispatcher claimed, not a finished one.
    public static func queuedMessagesAreCountedPerApp(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1", user: "alice"))
        var other = StoreFixtures.device("o1", user: "alice")
        other.appID = "com.example.other"
        try await store.saveDevice(other)
        #expect(try await store.queuedMessages(appID: StoreFixtures.appID) == 0)
        _ = try await store.accept(
            StoreFixtures.ingest([
                StoreFixtures.push("p1", device: "d1", at: 10),
                StoreFixtures.push("p2", device: "d1", at: 20),
                StoreFixtures.push("p3", device: "d1", kind: .call, at: 30, expires: 30_030),
                StoreFixtures.push("p4", device: "o1", at: 40),
            ])
        )
        let node = try await engine.open(storage)
        #expect(try await node.queuedMessages(appID: StoreFixtures.appID) == 2)
        #expect(try await node.queuedMessages(appID: "com.example.other") == 1)
        #expect(try await node.queuedMessages(appID: "com.example.none") == 0)
        // A claimed push is on its way: no longer counted.
        #expect(try await claimIDs(store, limit: 1, now: 100) == ["p3"])
        #expect(try await claimIDs(store, limit: 1, now: 100) == ["p1"])
        #expect(try await node.queuedMessages(appID: StoreFixtures.appID) == 1)
    }
}
