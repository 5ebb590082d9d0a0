import Foundation
import HeraldStore
import HeraldStoreConformance
import HeraldStoreSQLite
import Logging
import Synchronization

/// SQLite for the conformance rules: each storage is a new database file in a directory of the
/// test's own, removed when the test ends.
struct SQLiteEngine: StoreEngine {
    let directory: String

    func makeStorage() throws -> String {
        directory + "/\(UUID().uuidString).sqlite"
    }

    func open(_ path: String) throws -> any HeraldStore {
        var configuration = SQLiteStore.Configuration(path: path)
        // What the rules check does not depend on syncing to disk; the tests run faster without.
        configuration.durable = false
        return try SQLiteStore(configuration: configuration, logger: Logger(label: "test.store"))
    }

    /// What `SQLiteExport` hands over from the file (it needs every store on it closed).
    func exportedRecords(_ path: String) async throws -> [StoreRecord]? {
        let export = try SQLiteExport(path: path)
        let records = Mutex<[StoreRecord]>([])
        try await export.export(batchSize: 2) { batch in records.withLock { $0 += batch } }
        return records.withLock { $0 }
    }

    /// Runs `rule` against SQLite in a temporary directory.
    static func check(_ rule: StoreConformance.Rule) async throws {
        let directory = NSTemporaryDirectory() + "herald-conformance-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await rule.check(SQLiteEngine(directory: directory))
    }
}
