import Foundation
import HeraldStore
import HeraldStoreConformance
import Logging
import Synchronization

@testable import HeraldStorePostgres

/// PostgreSQL for the conformance rules: each storage is a new schema in the test cluster that
/// `scripts/with-postgres.sh` starts (`make unit` runs the tests through it), dropped when the
/// rule ends, with every store opened on it closed.
///
/// Without the cluster these tests fail, saying so: in CI they must never be skipped silently.
final class PostgresEngine: StoreEngine {
    let base: PostgresStoreConfiguration
    private let opened = Mutex<[PostgresStore]>([])
    private let schemas = Mutex<[String]>([])

    init() throws {
        base = try Self.testConfiguration()
    }

    /// The test cluster's configuration, from `HERALD_TEST_POSTGRES_URL`.
    static func testConfiguration() throws -> PostgresStoreConfiguration {
        guard let url = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"] else {
            throw MissingCluster()
        }
        var configuration = try PostgresStoreConfiguration(url: url)
        configuration.poolSize = 6
        return configuration
    }

    struct MissingCluster: Error, CustomStringConvertible {
        var description: String {
            "HERALD_TEST_POSTGRES_URL is not set: run the PostgreSQL tests through `make unit`, or "
                + "`scripts/with-postgres.sh swift test --filter Postgres`"
        }
    }

    func makeStorage() -> String {
        let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        schemas.withLock { $0.append(schema) }
        return schema
    }

    /// The test cluster's configuration on a new schema of its own (dropped by `tearDown`).
    func configurationOnNewStorage() -> PostgresStoreConfiguration {
        var configuration = base
        configuration.schema = makeStorage()
        return configuration
    }

    func open(_ schema: String) async throws -> any HeraldStore {
        try await openStore(schema)
    }

    func openStore(_ schema: String, statementTimeout: Duration? = nil) async throws -> PostgresStore {
        var configuration = base
        configuration.schema = schema
        if let statementTimeout { configuration.statementTimeout = statementTimeout }
        let store = try await PostgresStore.openRunning(
            configuration: configuration,
            logger: Logger(label: "test.store")
        )
        opened.withLock { $0.append(store) }
        return store
    }

    /// What `PostgresExport` hands over from the schema (the rule's stores may still be open).
    func exportedRecords(_ schema: String) async throws -> [StoreRecord]? {
        var configuration = base
        configuration.schema = schema
        let records = Mutex<[StoreRecord]>([])
        try await PostgresExport.withOpen(
            configuration: configuration,
            logger: Logger(label: "test.export"),
            requireStoppedNodes: false
        ) { export in
            try await export.export(batchSize: 2) { batch in records.withLock { $0 += batch } }
        }
        return records.withLock { $0 }
    }

    /// Closes every store and drops every schema this engine made.
    func tearDown() async {
        for store in opened.withLock({ stores in
            defer { stores = [] }
            return stores
        }) {
            await store.close()
        }
        let dropped = schemas.withLock { names in
            defer { names = [] }
            return names
        }
        guard !dropped.isEmpty else { return }
        _ = try? await PostgresStore.withOpen(configuration: base, logger: Logger(label: "test.admin")) { admin in
            for schema in dropped {
                try? await admin.execute(unsafeSQL: "DROP SCHEMA IF EXISTS \(schema) CASCADE")
            }
        }
    }

    /// Runs `rule` against PostgreSQL, then cleans up.
    static func check(_ rule: StoreConformance.Rule) async throws {
        let engine = try PostgresEngine()
        do {
            try await rule.check(engine)
        } catch {
            await engine.tearDown()
            throw error
        }
        await engine.tearDown()
    }
}

extension PostgresStore {
    /// Opens the store and runs it in a task of its own until `close()`: for tests that open
    /// stores as they go (a store serves calls only while its service runs).
    static func openRunning(configuration: PostgresStoreConfiguration, logger: Logger) async throws -> PostgresStore {
        let store = try await open(configuration: configuration, logger: logger)
        Task { try? await store.run() }
        return store
    }
}
