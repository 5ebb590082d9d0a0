import Foundation
import HeraldStore
import HeraldStoreSQLite
import HeraldTestSupport
import Logging
import Synchronization
import Testing

@testable import HeraldStorePostgres

/// `herald store migrate` back from PostgreSQL to SQLite: a SQLite store filled through the store
/// API is copied into PostgreSQL, then out again (`PostgresExport`) into a new SQLite file, whose
/// export is what the first file's was. The export waits for the nodes to stop.
@Suite("Store migration PostgreSQL → SQLite", .timeLimit(.minutes(2)))
struct StoreExportTests {
    /// Every record `export` hands over, in the order it hands them.
    static func records(_ export: any StoreExport) async throws -> [StoreRecord] {
        let records = Mutex<[StoreRecord]>([])
        try await export.export(batchSize: 2) { batch in records.withLock { $0 += batch } }
        return records.withLock { $0 }
    }

    @Test("SQLite → PostgreSQL → SQLite hands over the same records; refused while a node is connected")
    func roundTrip() async throws {
        let directory = StoreMigrateTests.Directory()
        _ = try await StoreMigrateTests.filledDatabase(directory)
        let original = try await Self.records(try SQLiteExport(path: directory.database))
        #expect(original.count == StoreMigrateTests.expectedTally.total)

        let engine = try PostgresEngine()
        let schema = engine.makeStorage()
        do {
            try await Self.check(engine, schema, original, directory)
        } catch {
            await engine.tearDown()
            throw error
        }
        await engine.tearDown()
    }

    static func check(
        _ engine: PostgresEngine,
        _ schema: String,
        _ original: [StoreRecord],
        _ directory: StoreMigrateTests.Directory
    ) async throws {
        let node = try await engine.openStore(schema)
        _ = try await node.importAll(from: try SQLiteExport(path: directory.database), batchSize: 3)
        var configuration = engine.base
        configuration.schema = schema
        let logger = Logger(label: "test.export")

        // A node is connected to the schema (its pool's sessions): refused, naming why.
        let refusal = await #expect(throws: StoreError.self) {
            try await PostgresExport.withOpen(configuration: configuration, logger: logger) { _ in }
        }
        #expect(refusal == .unavailable && "\(refusal.map { "\($0)" } ?? "")".contains("stop every node first"))
        // Another schema's node does not hold it up.
        let elsewhere = try await engine.openStore(engine.makeStorage())
        await node.close()
        let copy = directory.path + "/copy.sqlite"
        try await Self.withExportOnceStopped(configuration, logger) { export in
            #expect(try await export.exportTally() == StoreMigrateTests.expectedTally)
            let exported = try await Self.records(export)
            #expect(Set(exported) == Set(original) && exported.count == original.count)
            #expect(exported.map(\.kind) == exported.map(\.kind).sorted(), "kinds in transfer order")
            // The new file's store is released before its export opens it (exclusively).
            try await Self.importInto(copy, from: export)
        }
        await elsewhere.close()
        let copied = try await Self.records(try await Self.exportOnceReleased(copy))
        #expect(Set(copied) == Set(original) && copied.count == original.count)
    }

    static func importInto(_ path: String, from export: PostgresExport) async throws {
        let sqlite = try StoreMigrateTests.openSQLite(path)
        #expect(try await sqlite.importAll(from: export, batchSize: 2) == StoreMigrateTests.expectedTally)
    }

    /// The SQLite store that wrote `path` closes its connections when its last reference goes,
    /// which a task finishing its write may hold a moment longer (seen under AddressSanitizer):
    /// the export, which takes the file exclusively, is tried until they are closed.
    static func exportOnceReleased(_ path: String) async throws -> SQLiteExport {
        try await eventually("the SQLite file released", every: .milliseconds(20)) {
            do {
                return try SQLiteExport(path: path)
            } catch let error where String(describing: error).contains("open in another process") {
                return nil
            }
        }
    }

    /// The server ends a closed pool's sessions a moment after the client closed them: the
    /// export is tried until `pg_stat_activity` no longer shows them, then runs `body`.
    static func withExportOnceStopped(
        _ configuration: PostgresStoreConfiguration,
        _ logger: Logger,
        _ body: (PostgresExport) async throws -> Void
    ) async throws {
        let _: Bool = try await eventually("the closed pool's sessions ended", every: .milliseconds(20)) {
            do {
                try await PostgresExport.withOpen(configuration: configuration, logger: logger, body)
                return true
            } catch let error where String(describing: error).contains("stop every node first") {
                return nil
            }
        }
    }

    @Test("a schema with no Herald data, and a database that cannot be reached, are refused with one line")
    func refusals() async throws {
        let engine = try PostgresEngine()
        var configuration = engine.configurationOnNewStorage()
        let logger = Logger(label: "test.export")
        await #expect(throws: StoreError.unavailable) {
            try await PostgresExport.withOpen(configuration: configuration, logger: logger) { _ in }
        }
        configuration.port = 1
        await #expect(throws: StoreError.unavailable) {
            try await PostgresExport.withOpen(configuration: configuration, logger: logger) { _ in }
        }
        await engine.tearDown()
    }
}
