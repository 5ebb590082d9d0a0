import HeraldCrypto
public import HeraldStore
import HeraldStorePostgres
public import Logging
public import ServiceLifecycle

extension HeraldServer {
    /// Opens the store `configuration` names, runs it while `body` runs, and stops it after
    /// (also when `body` throws): for commands that change the relay's data beside a running node
    /// (`herald keys api`), and around the relay's own services (`herald serve`, `herald relay`).
    /// A database that cannot be reached or used fails with one line naming it.
    public static func withStore<T: Sendable>(
        _ configuration: HeraldConfiguration,
        logger: Logger,
        _ body: (any HeraldStore) async throws -> T
    ) async throws -> T {
        let store = try await openStore(configuration, logger: logger)
        return try await withServices(service(of: store).map { [$0] } ?? [], logger: logger) {
            try await body(store)
        }
    }

    /// The store's own service: PostgreSQL's connection pool, its calls' watchdog and its
    /// NOTIFYs; none for SQLite, whose work runs in the calls.
    static func service(of store: any HeraldStore) -> (any Service)? {
        store as? PostgresStore
    }

    /// Runs `services` under a `ServiceGroup` of their own while `body` runs, then shuts them down
    /// gracefully, in reverse order, and returns once they stopped.
    ///
    /// For what the relay's (or the provider's) group needs before it starts and after it stops:
    /// the store (the start-up reads and writes it before any relay service runs, and the last
    /// outcomes are written to it after the dispatcher drained) and the in-process sandbox (the
    /// provider's clients connect to it). A `ServiceGroup` starts its services without waiting for
    /// one to be ready, so these run in a group around it; see docs/architecture.md, "Shutdown".
    public static func withServices<T: Sendable>(
        _ services: [any Service],
        logger: Logger,
        _ body: () async throws -> T
    ) async throws -> T {
        guard !services.isEmpty else { return try await body() }
        let group = ServiceGroup(
            configuration: .init(
                services: services.map { .init(service: $0) },
                // The signals are the inner group's: it stops first, then this one.
                gracefulShutdownSignals: [],
                logger: logger
            )
        )
        return try await withThrowingTaskGroup(of: Void.self, returning: T.self) { tasks in
            tasks.addTask { try await group.run() }
            do {
                let value = try await body()
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
                return value
            } catch {
                await group.triggerGracefulShutdown()
                try? await tasks.waitForAll()
                throw error
            }
        }
    }

    /// The master key and the API key a relay runs with, and where each came from (for the banner).
    struct Secrets: Sendable {
        var masterKey: MasterKey
        var masterSource: String
        var apiKey: String
        var apiKeySource: String

        init(_ keys: ServerKeys) throws {
            (masterKey, masterSource) = try keys.masterKey()
            (apiKey, apiKeySource) = try keys.apiKey()
        }
    }
}
