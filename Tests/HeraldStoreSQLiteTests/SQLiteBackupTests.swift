import Foundation
import GRDB
import HeraldStore
import HeraldTestSupport
import Logging
import Testing

@testable import HeraldStoreSQLite

/// `herald store backup`: a copy of a database a node has open, usable as the node's database.
@Suite("SQLite backup", .timeLimit(.minutes(2)))
struct SQLiteBackupTests {
    @Test("a store in use is copied whole: the copy opens as a store with its devices and unfinished pushes")
    func copyOfAStoreInUse() async throws {
        let root = SQLiteAtRestTests.temporaryDirectory("backup")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/data/herald.sqlite"
        let store = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.backup"))
        try await store.saveApp(StoreFixtures.app())
        try await store.saveDevice(StoreFixtures.device("d1"))
        try await store.saveDevice(StoreFixtures.device("d2"))
        let pushes = (0..<5).map { StoreFixtures.push("p\($0)", device: "d1", at: Int64($0)) }
        #expect(try await store.accept(StoreFixtures.ingest(pushes)) == .accepted)

        // The store stays open (its WAL holds the writes): the backup must see them anyway.
        let target = root + "/backups/herald-copy.sqlite"
        let summary = try SQLiteBackup.copy(from: path, to: target)
        #expect(summary.devices == 2)
        #expect(summary.unfinishedPushes == 5)
        #expect(summary.bytes > 0)
        #expect(summary.schema == SQLiteStore.migrator.migrations.last)
        #expect(try SQLiteAtRestTests.mode(target) == 0o600)

        let copy = try SQLiteStore(configuration: .init(path: target), logger: Logger(label: "test.backup.copy"))
        #expect(try await copy.device(id: "d2") != nil)
        let claimed = try await copy.claim(limit: 10, owner: "restored", now: 10, leaseUntil: 40)
        #expect(claimed.map(\.entry.pushID).sorted() == ["p0", "p1", "p2", "p3", "p4"])
    }

    @Test("a backup never overwrites, and refuses a file that is not a Herald database")
    func refusals() async throws {
        let root = SQLiteAtRestTests.temporaryDirectory("backup-refusals")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/herald.sqlite"
        let store = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.backup"))
        try await store.saveApp(StoreFixtures.app())
        let existing = root + "/existing.sqlite"
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: existing))
        #expect(throws: StoreError.unavailable) { try SQLiteBackup.copy(from: path, to: existing) }
        #expect(FileManager.default.contents(atPath: existing) == Data("keep me".utf8))

        #expect(throws: StoreError.unavailable) { try SQLiteBackup.copy(from: existing, to: root + "/x.sqlite") }
        #expect(!FileManager.default.fileExists(atPath: root + "/x.sqlite"))
        #expect(throws: StoreError.unavailable) { try SQLiteBackup.copy(from: root + "/none", to: root + "/y.sqlite") }
    }

    @Test("a database a newer Herald migrated is refused, naming why, and left as it was")
    func newerSchemaRefused() async throws {
        let root = SQLiteAtRestTests.temporaryDirectory("newer")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/herald.sqlite"
        do {
            let store = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.newer"))
            try await store.saveApp(StoreFixtures.app())
        }
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')")
        }
        try queue.close()
        #expect {
            _ = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.newer"))
        } throws: { error in
            (error as? StoreError) == .unavailable && "\(error)".contains("newer Herald")
        }
        let after = try DatabaseQueue(path: path)
        #expect(try await after.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM apps") } == 1)
    }
}
