import Foundation
public import HeraldStore
public import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// `HeraldStore` on PostgreSQL: the store several relay nodes share.
///
/// Every promise of the store protocols holds across nodes, because each one is kept by the
/// database rather than by this process: claims take rows with `FOR UPDATE SKIP LOCKED`, an
/// idempotency key is a primary key, transcript positions come from a per-conversation counter
/// row, and the janitor's sweep holds an advisory lock. Commits are durable when they return
/// (the server's `synchronous_commit`, on by default).
public final class PostgresStore: HeraldStore {
    let client: PostgresClient
    let logger: Logger
    let configuration: PostgresStoreConfiguration
    /// Names this store in its NOTIFY payloads, so it ignores its own.
    let instance = UUID().uuidString
    private let runner: Task<Void, Never>
    private let running = RunFlag()
    private let notifyPending = Atomic<Bool>(false)

    private init(configuration: PostgresStoreConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        let client = PostgresClient(configuration: configuration.clientConfiguration, backgroundLogger: logger)
        self.client = client
        let running = self.running
        runner = Task {
            running.value.store(true, ordering: .releasing)
            await client.run()
        }
    }

    /// Connects, brings the schema up to date (once, when several nodes start together), and
    /// returns the store. Throws `unavailable` naming what failed when the database cannot be
    /// reached or logged into, and when its schema is newer than this build.
    public static func open(
        configuration: PostgresStoreConfiguration,
        logger: Logger
    ) async throws(StoreError) -> PostgresStore {
        try await PostgresMigrations.run(configuration: configuration, logger: logger)
        let store = PostgresStore(configuration: configuration, logger: logger)
        // The pool serves no lease before its run loop started (it warns and waits).
        while !store.running.value.load(ordering: .acquiring) { await Task.yield() }
        return store
    }

    /// Closes every connection; calls made afterwards fail with `unavailable`.
    public func close() async {
        runner.cancel()
        await runner.value
    }

    deinit {
        runner.cancel()
    }

    // MARK: Running statements

    /// Runs `work` in one transaction on one pooled connection, committed before it returns.
    ///
    /// A transaction that lost a race the database detected (a unique key two transactions wrote
    /// at once, a serialization failure or a deadlock) is run again from the start: every caller
    /// writes as if it were alone, as on SQLite, whose writer is single.
    @discardableResult
    func transaction<T: Sendable>(
        _ what: String,
        _ work: (PostgresConnection) async throws -> T
    ) async throws(StoreError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await client.withConnection { connection in
                    try await connection.run("BEGIN", logger: logger)
                    do {
                        let value = try await work(connection)
                        try await connection.run("COMMIT", logger: logger)
                        return value
                    } catch {
                        _ = try? await connection.run("ROLLBACK", logger: logger)
                        throw error
                    }
                }
            } catch let error as StoreError {
                throw error
            } catch {
                if attempt < 5, PostgresFailure.isTransient(error) { continue }
                throw PostgresFailure.storeError(error, while: what)
            }
        }
    }

    /// Runs one statement on a pooled connection and collects its rows.
    func rows(_ what: String, _ query: PostgresQuery) async throws(StoreError) -> [PostgresRow] {
        do {
            return try await client.withConnection { connection in
                try await connection.run(query, logger: logger)
            }
        } catch {
            throw PostgresFailure.storeError(error, while: what)
        }
    }

    /// Tells the other stores on this database (other relay nodes) that pushes were queued.
    ///
    /// NOTIFY inside every ingest transaction would serialize all commits on the server's
    /// notification queue lock; instead one NOTIFY is sent after the commits that happened while
    /// none was on its way. A commit that lands after the flag is cleared sends its own, so none
    /// goes unannounced.
    func announceQueued() {
        guard !notifyPending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Task { [self] in
            notifyPending.store(false, ordering: .releasing)
            do {
                _ = try await rows(
                    "notify",
                    "SELECT pg_notify(\(PostgresWakeups.channel(schema: configuration.schema)), \(instance))"
                )
            } catch {
                logger.debug("cannot announce queued pushes", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// Maps what postgres-nio throws to `StoreError`, without the values a statement carried (a
/// server error's detail may quote a token or a key).
enum PostgresFailure {
    /// SQLSTATE codes of transactions the database refused because of another one running at
    /// the same time: run again, they succeed.
    private static let transientStates: Set<String> = ["23505", "40001", "40P01"]

    static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    static func isTransient(_ error: any Error) -> Bool {
        sqlState(error).map(transientStates.contains) ?? false
    }

    static func storeError(_ error: any Error, while what: String) -> StoreError {
        if let error = error as? StoreError { return error }
        let state = sqlState(error)
        let text = describe(error)
        if state == "23505" || state == "23503" {
            return StoreError.conflict.with(detail: "\(what): \(text)")
        }
        return StoreError.unavailable.with(detail: "\(what): \(text)")
    }

    /// One line: the server's message and SQLSTATE, or the connection failure.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let info = error.serverInfo {
            let message = info[.message] ?? "server error"
            return "\(message) (SQLSTATE \(info[.sqlState] ?? "?"))"
        }
        if let underlying = error.underlying {
            return "\(error.code): \(underlying)"
        }
        return "\(error.code)"
    }
}

extension ByteBuffer {
    /// Bytes for a `bytea` parameter.
    init(_ bytes: [UInt8]) {
        self.init(bytes: bytes)
    }

    var bytes: [UInt8] { Array(readableBytesView) }
}

/// Wake-ups across nodes: LISTEN on one pooled connection for the other stores' NOTIFYs.
enum PostgresWakeups {
    /// The channel, per schema (notifications are database-wide).
    static func channel(schema: String) -> String { "herald_outbox_\(schema.lowercased())" }
}

extension PostgresStore {
    public func followQueuedElsewhere(_ queued: @escaping @Sendable () -> Void) async {
        let channel = PostgresWakeups.channel(schema: configuration.schema)
        var delay = Duration.milliseconds(100)
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: channel) { notifications in
                        // Whatever was queued while nobody listened.
                        queued()
                        delay = .milliseconds(100)
                        for try await notification in notifications where notification.payload != instance {
                            queued()
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning(
                    "cannot follow pushes queued by other nodes; retrying",
                    metadata: ["error": "\(PostgresFailure.describe(error))"]
                )
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(5))
        }
    }
}

extension PostgresConnection {
    /// Runs one statement and collects its rows: a failure surfaces here, never later while
    /// reading.
    @discardableResult
    func run(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await self.query(query, logger: logger).collect()
    }
}

extension PostgresStore {
    /// Runs SQL as given, outside the store's protocols: for tests and maintenance.
    func execute(unsafeSQL sql: String) async throws(StoreError) {
        _ = try await rows("run \(sql.prefix(40))", PostgresQuery(unsafeSQL: sql))
    }
}

/// Set once the pool's run loop is starting.
final class RunFlag: Sendable {
    let value = Atomic<Bool>(false)
}
