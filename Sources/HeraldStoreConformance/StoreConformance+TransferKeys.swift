import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// `StoreImport` of what a deployment would lose without it: a store holding an app that
    /// holds messages (its policy and hold), a valid API key with a rate and a burst and a
    /// revoked admin key, three audit entries, a message held for a user with no device and one
    /// whose hold ended is exported (by the engine's export where it has one, checked against
    /// what the store's API reads, audit entries in their order; otherwise as that API reads it)
    /// and imported into fresh storage. The keys read back equal (digests, scopes, rate, burst,
    /// revocation), the audit log in the same order and pages the same, the app keeps its
    /// policy, the held message's sealed bytes are unchanged and its key answers its receipt; the
    /// ended hold ends; when the user's first device activates on two nodes at once, the message
    /// is released once.
    public static func importsKeysAuditAndHeldMessages(_ engine: some StoreEngine) async throws {
        let sourceStorage = try await engine.makeStorage()
        let expected = try await fillKeysAuditAndHolds(engine, sourceStorage)
        #expect(expected.keys.map(\.revokedAt) == [nil, 2_000] && expected.keys.first?.burst == 20)
        let carried: Set<StoreRecordKind> = [.apiKeys, .auditEntries, .heldMessages]
        var records = expected.base
        if let exported = try await engine.exportedRecords(sourceStorage) {
            let handed = exported.filter { carried.contains($0.kind) }
            #expect(Set(handed) == Set(expected.moved) && handed.count == expected.moved.count)
            // The log's order is the order its entries were written.
            #expect(handed.filter { $0.kind == .auditEntries } == expected.moved.filter { $0.kind == .auditEntries })
            #expect(Set(exported.filter { !carried.contains($0.kind) }).isSuperset(of: expected.base))
            records = exported
        } else {
            records += expected.moved
        }

        let storage = try await engine.makeStorage()
        let store = try await engine.open(storage)
        let target = try #require(store as? any StoreImport, "the engine's store does not take imports")
        let source = RecordsExport(records: records)
        let tally = try await source.exportTally()
        #expect(tally[.apiKeys] == 2 && tally[.auditEntries] == 3 && tally[.heldMessages] == 2)
        #expect(try await target.importAll(from: source, batchSize: 2) == tally)
        #expect(try await target.importTally() == tally)

        #expect(try await store.apiKeys() == expected.keys)
        #expect(try await store.revokeAPIKey(id: "x-key-admin", at: 9_000) == false, "still revoked, at its time")
        #expect(try await store.auditEntries(before: nil, limit: 10) == expected.audit)
        #expect(try await store.auditEntries(before: "x-audit-3", limit: 1) == [expected.audit[1]])
        #expect(try await store.app(id: StoreFixtures.appID) == expected.app)
        #expect(try await store.message(id: "x-held") == expected.message, "sealed bytes as they were")
        #expect(try await store.heldMessages(userID: "xu-held", now: 0) == expected.holds)
        let repeated = StoreFixtures.ingest([], key: "x-held-key", message: expected.message, receipt: [9])
        #expect(try await store.hold(repeated, until: 400_000, appID: nil) == .duplicate(receipt: [4, 2]))
        #expect(try await store.endHolds(now: 100) == 1, "the hold that ended in the source ends here")

        // The user's first phone activates on two nodes at once: one release writes its push.
        let other = try await engine.open(storage)
        try await store.saveDevice(StoreFixtures.device("x-held-phone", user: "xu-held", createdAt: 200))
        let releases = try await withThrowingTaskGroup(of: [String].self) { group in
            for (index, node) in [store, other].enumerated() {
                group.addTask {
                    let push = StoreFixtures.push("x-held-\(index)", device: "x-held-phone", at: 200)
                    return try await node.release([HeldRelease(messageID: "x-held", pushes: [push])], now: 200)
                }
            }
            var all: [[String]] = []
            for try await released in group { all.append(released) }
            return all
        }
        #expect(releases.sorted { $0.count < $1.count } == [[], ["x-held"]])
        #expect(try await claimIDs(store, now: 201).count == 1)
        #expect(try await other.heldMessages(userID: "xu-held", now: 201).isEmpty)
    }

    /// What `fillKeysAuditAndHolds` wrote, read back through the store's API.
    private struct KeysAuditAndHolds {
        var app: AppRecord
        var message: MessageRecord
        var keys: [APIKeyRecord]
        /// Newest first, as `auditEntries` reads them.
        var audit: [AuditEntry]
        var holds: [HeldMessage]

        /// The records the held messages refer to, as an export hands them over.
        var base: [StoreRecord] {
            [
                .app(app), .message(message),
                .message(StoreFixtures.message("x-ended", user: "xu-held", at: 2, expires: 900_000)),
                .idempotencyKey(IdempotencyRecord(key: "x-held-key", receipt: [4, 2], createdAt: 1)),
            ]
        }

        /// The records of the kinds this rule is about, audit entries oldest first.
        var moved: [StoreRecord] {
            keys.map(StoreRecord.apiKey) + audit.reversed().map(StoreRecord.auditEntry)
                + holds.map(StoreRecord.heldMessage)
        }
    }

    /// Fills `storage` through the store API and reads back what it wrote. The store is released
    /// before it returns (an export may need the storage closed).
    private static func fillKeysAuditAndHolds<Engine: StoreEngine>(
        _ engine: Engine,
        _ storage: Engine.Storage
    ) async throws -> KeysAuditAndHolds {
        let store = try await engine.open(storage)
        var app = StoreFixtures.app()
        app.undeliverable = .hold
        app.holdFor = 86_400_000
        app.deadlines = [DeadlineRule(kind: .message, after: 120, action: .otherDevices)]
        try await store.saveApp(app)

        let valid = APIKeyRecord(
            id: "x-key-crm",
            name: "crm-eu",
            appID: StoreFixtures.appID,
            scopes: [.send, .read],
            secretDigest: [UInt8](repeating: 0xAB, count: 32),
            ratePerSecond: 2.5,
            burst: 20,
            createdAt: 1_000
        )
        let admin = APIKeyRecord(
            id: "x-key-admin",
            name: "ops",
            appID: nil,
            scopes: Set(APIScope.allCases),
            secretDigest: [UInt8](repeating: 0xCD, count: 32),
            createdAt: 1_001
        )
        #expect(try await store.insertAPIKey(valid))
        #expect(try await store.insertAPIKey(admin))
        #expect(try await store.revokeAPIKey(id: "x-key-admin", at: 2_000))

        let actions = ["key.created", "key.created", "key.revoked"]
        for (index, action) in actions.enumerated() {
            try await store.appendAudit(
                AuditEntry(
                    id: "x-audit-\(index + 1)",
                    at: 1_000 + Int64(index),
                    actor: index == 2 ? "key:x-key-crm" : "cli",
                    action: action,
                    target: index == 0 ? "x-key-crm" : "x-key-admin",
                    appID: index == 0 ? StoreFixtures.appID : nil
                )
            )
        }

        // Sealed bytes of their own, so that a copy that changed them would show.
        var message = StoreFixtures.message("x-held", user: "xu-held", at: 1, expires: 900_000)
        message.sealedText = (0..<64).map { UInt8($0 * 3 % 256) }
        message.sealedSender = [UInt8](repeating: 0x5A, count: 40)
        message.sealedPushOptions = [UInt8](repeating: 0x11, count: 24)
        let ingest = StoreFixtures.ingest([], key: "x-held-key", message: message, receipt: [4, 2])
        #expect(try await store.hold(ingest, until: 500_000, appID: StoreFixtures.appID) == .accepted)
        let ended = StoreFixtures.message("x-ended", user: "xu-held", at: 2, expires: 900_000)
        #expect(try await store.hold(StoreFixtures.ingest([], message: ended), until: 50, appID: nil) == .accepted)

        return KeysAuditAndHolds(
            app: try #require(try await store.app(id: StoreFixtures.appID)),
            message: try #require(try await store.message(id: "x-held")),
            keys: try await store.apiKeys(),
            audit: try await store.auditEntries(before: nil, limit: 10),
            holds: try await store.heldMessages(userID: "xu-held", now: 0)
        )
    }
}
