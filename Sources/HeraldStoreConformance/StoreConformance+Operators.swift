import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    static func operatorAccount(_ name: String, _ role: OperatorRole, at time: Int64 = 1_000) -> OperatorRecord {
        OperatorRecord(name: name, role: role, passwordHash: "$argon2id$v=19$m=8,t=1,p=1$\(name)$hash", createdAt: time)
    }

    static func consoleSession(_ id: String, of account: String, expires: Int64) -> ConsoleSessionRecord {
        ConsoleSessionRecord(id: id, operatorName: account, role: .viewer, createdAt: 100, expiresAt: expires)
    }

    static func operatorAudit(_ id: String, _ action: String, target: String) -> AuditEntry {
        AuditEntry(id: id, at: 1_000, actor: "cli", action: action, target: target, appID: nil)
    }

    /// Operators are saved (added or replaced by name, with their audit entry) and read by name
    /// from any store on the data; a session is stored once under its id (a second with the id
    /// writes nothing), read back until it is deleted (once: then `stale`) or expires before the
    /// time a sweep is given (one expiring at that time stays); deleting an operator deletes its
    /// sessions and no other's, writes its audit entry, and is `stale`, without the entry, once
    /// the operator is gone.
    public static func operatorsAndConsoleSessions(_ engine: some StoreEngine) async throws {
        let storage = try await engine.makeStorage()
        let store = try await engine.open(storage)
        let other = try await engine.open(storage)
        #expect(try await store.operators().isEmpty)
        #expect(try await store.operatorAccount(name: "ann") == nil)

        let bob = operatorAccount("bob", .viewer)
        let ann = operatorAccount("ann", .operator, at: 2_000)
        #expect(try await store.apply(.saveOperator(bob, audit: nil)) == .applied)
        let added = operatorAudit("op-audit-1", "operator.added", target: "ann")
        #expect(try await store.apply(.saveOperator(ann, audit: added)) == .applied)
        #expect(try await other.operators() == [ann, bob])
        var promoted = bob
        promoted.role = .operator
        promoted.passwordHash = "$argon2id$v=19$m=8,t=1,p=1$new$hash"
        promoted.createdAt = 3_000
        let replaced = operatorAudit("op-audit-2", "operator.replaced", target: "bob")
        #expect(try await other.apply(.saveOperator(promoted, audit: replaced)) == .applied)
        #expect(try await store.operatorAccount(name: "bob") == promoted)
        #expect(try await store.operators() == [ann, promoted])

        let first = consoleSession("s-1", of: "ann", expires: 5_000)
        #expect(try await store.apply(.saveConsoleSession(first)) == .applied)
        var twin = consoleSession("s-1", of: "bob", expires: 9_000)
        twin.role = .operator
        #expect(try await other.apply(.saveConsoleSession(twin)) == .duplicate)
        #expect(try await other.consoleSession(id: "s-1") == first)
        #expect(try await other.consoleSession(id: "s-none") == nil)
        #expect(try await other.apply(.deleteConsoleSession(id: "s-1")) == .applied)
        #expect(try await store.apply(.deleteConsoleSession(id: "s-1")) == .stale)
        #expect(try await store.consoleSession(id: "s-1") == nil)

        let sessions = [
            consoleSession("s-ann-old", of: "ann", expires: 500), consoleSession("s-ann", of: "ann", expires: 2_000),
            consoleSession("s-bob-edge", of: "bob", expires: 1_000), consoleSession("s-bob", of: "bob", expires: 4_000),
        ]
        #expect(try await store.apply(sessions.map { .saveConsoleSession($0) }) == Array(repeating: .applied, count: 4))
        #expect(try await other.apply(.deleteExpiredConsoleSessions(before: 1_000)) == .applied)
        #expect(try await store.consoleSession(id: "s-ann-old") == nil)
        #expect(try await store.consoleSession(id: "s-bob-edge") == sessions[2], "it expires at the sweep's time")

        let removed = operatorAudit("op-audit-3", "operator.removed", target: "ann")
        #expect(try await store.apply(.deleteOperator(name: "ann", audit: removed)) == .applied)
        #expect(try await other.operators() == [promoted])
        #expect(try await other.consoleSession(id: "s-ann") == nil)
        #expect(try await other.consoleSession(id: "s-bob") == sessions[3])
        let again = operatorAudit("op-audit-4", "operator.removed", target: "ann")
        #expect(try await other.apply(.deleteOperator(name: "ann", audit: again)) == .stale)
        #expect(
            try await store.auditEntries(before: nil, limit: 10).map(\.id) == [
                "op-audit-3", "op-audit-2", "op-audit-1",
            ]
        )
    }

    /// `StoreImport` carries operator accounts (their hashes as they were) and never console
    /// sessions: exported by the engine's export where it has one, which hands over no session,
    /// and imported into fresh storage, where the accounts read back equal and no session is.
    public static func importsOperatorsButNoSessions(_ engine: some StoreEngine) async throws {
        let sourceStorage = try await engine.makeStorage()
        let accounts = [operatorAccount("ann", .operator), operatorAccount("zed.ops_2-b", .viewer, at: 7)]
        do {
            let source = try await engine.open(sourceStorage)
            for account in accounts.reversed() { try await source.saveOperator(account) }
            #expect(try await source.apply(.saveConsoleSession(consoleSession("s", of: "ann", expires: 9))) == .applied)
        }
        var records = accounts.map(StoreRecord.operatorAccount)
        if let exported = try await engine.exportedRecords(sourceStorage) {
            #expect(Set(exported) == Set(records) && exported.count == records.count)
            records = exported
        }

        let storage = try await engine.makeStorage()
        let store = try await engine.open(storage)
        let target = try #require(store as? any StoreImport, "the engine's store does not take imports")
        let export = RecordsExport(records: records)
        let tally = try await export.exportTally()
        #expect(tally[.operators] == 2 && tally.total == 2)
        #expect(try await target.importAll(from: export, batchSize: 1) == tally)
        #expect(try await target.importTally() == tally)
        #expect(try await store.operators() == accounts)
        #expect(try await store.consoleSession(id: "s") == nil)
    }
}
