import Foundation
import HeraldBatching
public import HeraldStore
public import Logging
import NIOCore
import PostgresNIO
import Synchronization
import _ConnectionPoolModule

/// `HeraldStore` on PostgreSQL: the store several relay nodes share.
///
/// Every promise of the store protocols holds across nodes, because each one is kept by the
/// database rather than by this process: claims take rows with `FOR UPDATE SKIP LOCKED`, an
/// idempotency key is a primary key, transcript positions come from a per-conversation counter
/// row, and the janitor's sweep holds an advisory lock. Commits are durable when they return
/// (the server's `synchronous_commit`, on by default).
public final class PostgresStore: HeraldStore {
    let logger: Logger
    let configuration: PostgresStoreConfiguration
    /// Names this store in its NOTIFY payloads, so it ignores its own.
    let instance = UUID().uuidString
    /// The pool and whether the store runs; one lock, so that a pool replaced after an outage
    /// and a close never cross.
    let running: Mutex<Running>
    /// Pools for `run()` to run: the first, and each fresh one after an outage.
    let poolsToRun: (stream: AsyncStream<Pool>, continuation: AsyncStream<Pool>.Continuation)
    /// Opened when `run()` has returned.
    let finished = Latch()
    private let health = Mutex(DatabaseHealth())
    /// The deadlines of every call, kept by one loop of `run()`.
    let watchdog = CallWatchdog()
    let notifyPending = Atomic<Bool>(false)
    /// Asks `run()`'s announcer for a NOTIFY (one pending at most: it covers every commit before it).
    let notices = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    /// Writes the ingests that arrive together in one statement and one commit, as SQLite's
    /// single writer groups them in one transaction. Each write alone costs a round trip and a
    /// commit (a WAL flush); under load both dominate.
    ///
    /// One batch at a time: the writes that arrive while a batch commits all go in the next, and
    /// in the relay benchmark (32 connections, one node) that took ingest batches from 5.6 to 9.5
    /// and the CPU per message down by a seventh in the relay and in PostgreSQL
    /// (docs/performance.md); a second batch at once only queued on the server's commit. Two
    /// ingests sharing an idempotency key never share a batch, so the database decides between
    /// them as between two statements; a batch that fails is written again one ingest at a time.
    let ingests = Batcher<Ingest, ChangeOutcome>(
        rules: .init(maxInFlight: 1, maxItems: 64, keys: { ingest in ingest.idempotencyKey.map { [$0] } ?? [] })
    )
    /// Reads the recipients every ingest asks for (by user) together in one statement: one batch
    /// out at a time, so the reads asked for during a round trip share the next.
    let recipientReads = Batcher<String, RecipientsSnapshot?>(rules: .init(maxInFlight: 1, maxItems: 128))
    /// The recipients read last per user, with their versions (`recipientsForIngest`).
    let recipientCache = Mutex(RecipientCache())

    private init(configuration: PostgresStoreConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        let pool = Pool(configuration, logger: logger)
        running = Mutex(Running(pool: pool))
        poolsToRun = AsyncStream.makeStream(of: Pool.self)
        poolsToRun.continuation.yield(pool)
    }

    /// Connects and reads the schema's version without changing anything (no migration): for
    /// `herald check`. Throws `unavailable` naming what failed when the database cannot be
    /// reached or logged into.
    public static func schemaStatus(
        configuration: PostgresStoreConfiguration,
        logger: Logger
    ) async throws(StoreError) -> SchemaStatus {
        try await PostgresMigrations.status(configuration: configuration, logger: logger)
    }

    /// Connects, brings the schema up to date (once, when several nodes start together), and
    /// returns the store, which serves calls while its `run()` runs: add it to the
    /// `ServiceGroup` before the services that use it, or use `withOpen`. Throws `unavailable` naming what failed when the database cannot be
    /// reached or logged into, and when its schema is newer than this build.
    public static func open(
        configuration: PostgresStoreConfiguration,
        logger: Logger
    ) async throws(StoreError) -> PostgresStore {
        try await PostgresMigrations.run(configuration: configuration, logger: logger)
        return PostgresStore(configuration: configuration, logger: logger)
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
        _ work: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(StoreError) -> T {
        let logger = logger
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await withConnection(what) { connection in
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
        let logger = logger
        return try await connected(what) { connection in
            try await connection.run(query, logger: logger)
        }
    }

    /// Runs a prepared statement (parsed and planned once per connection) and collects its rows:
    /// for the statements every ingest runs.
    func rows<Statement: PostgresPreparedStatement>(
        _ what: String,
        prepared statement: Statement
    ) async throws(StoreError) -> [PostgresRow] where Statement.Row == PostgresRow {
        let logger = logger
        return try await connected(what) { connection in
            var rows: [PostgresRow] = []
            for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
            return rows
        }
    }

    /// `withConnection`, its failures as the store's: a `StoreError` as it is, any other as
    /// `PostgresFailure` reads it.
    private func connected<T: Sendable>(
        _ what: String,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(StoreError) -> T {
        do {
            return try await withConnection(what, body)
        } catch let error as StoreError {
            throw error
        } catch {
            throw PostgresFailure.storeError(error, while: what)
        }
    }

    /// Runs a statement unnamed, so PostgreSQL plans it for the values bound every time: for the
    /// statements that join the dispatcher's pushes to the outbox (claim, expired claims, finish).
    ///
    /// Why not prepared: a prepared statement's generic plan is kept until the table's statistics
    /// change (the next ANALYZE). Made while the outbox was small, it is a hash join over a
    /// sequential scan of the outbox, and a fresh outbox grows by thousands of rows a second
    /// before autovacuum looks: the relay benchmark's completions went from under a millisecond
    /// to 10 ms each, scanning every row. A plan made for the bound values sees the table's
    /// current size and the array's length, and costs a fraction of a millisecond.
    func rows<Statement: PostgresPreparedStatement>(
        _ what: String,
        plannedEachTime statement: Statement
    ) async throws(StoreError) -> [PostgresRow] {
        let bindings: PostgresBindings
        do {
            bindings = try statement.makeBindings()
        } catch {
            throw PostgresFailure.storeError(error, while: what)
        }
        return try await rows(what, PostgresQuery(unsafeSQL: Statement.sql, binds: bindings))
    }

    /// Runs `body` on a pooled connection, or fails fast with `unavailable` while the database is
    /// known to be down.
    ///
    /// Waiting for a connection is bounded by `connectTimeout`; a statement, once it runs, by the
    /// server's statement timeout. A wait that ends without a connection, or a connection that
    /// fails, marks the database down until a probe on a fresh connection succeeds.
    private func withConnection<T: Sendable>(
        _ what: String,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        switch health.withLock({ $0.beforeCall(at: .now) }) {
        case .proceed:
            break
        case .refuse(let since):
            throw StoreError.unavailable.with(
                detail: "\(what): the database has not answered for \(Self.seconds(ContinuousClock.now - since)) s"
            )
        case .probe:
            try await probe(what)
        }
        let client = try await runningClient(what)
        let connectionWithin = configuration.connectTimeout
        // However the call goes, its caller hears back by then: a statement on a connection the
        // server dropped mid-way has been seen never to finish (a request held, and a graceful
        // shutdown waiting for it); the call is then left behind, answered as unavailable.
        let answerWithin = connectionWithin + configuration.statementTimeout + .seconds(1)
        let watchdog = watchdog
        do {
            return try await withCheckedThrowingContinuation { continuation in
                let answered = RunFlag()
                let work = TaskBox()
                let id = watchdog.register(connectionWithin: connectionWithin, answerWithin: answerWithin) { lateness in
                    guard !answered.value.exchange(true, ordering: .acquiringAndReleasing) else { return }
                    work.cancel()
                    switch lateness {
                    case .noConnection: continuation.resume(throwing: NoConnection(limit: connectionWithin))
                    case .noAnswer: continuation.resume(throwing: Abandoned(limit: answerWithin))
                    }
                }
                work.set(
                    Task {
                        let result: Result<T, any Error>
                        do {
                            result = .success(
                                try await client.withConnection { connection in
                                    watchdog.leased(id)
                                    return try await body(connection)
                                }
                            )
                        } catch {
                            result = .failure(error)
                        }
                        watchdog.finished(id)
                        if !answered.value.exchange(true, ordering: .acquiringAndReleasing) {
                            continuation.resume(with: result)
                        }
                    }
                )
            }
        } catch {
            if error is NoConnection || error is Abandoned || PostgresFailure.isConnectionFailure(error) {
                noteUnreachable(error)
            }
            throw error
        }
    }

    /// A call that did not finish within its hard limit, and was left behind.
    struct Abandoned: Error, CustomStringConvertible {
        let limit: Duration
        var description: String { "no answer from the database within \(PostgresStore.seconds(limit)) s" }
    }

    /// No connection came within the time allowed.
    struct NoConnection: Error, CustomStringConvertible {
        let limit: Duration
        var description: String { "no connection to the database within \(PostgresStore.seconds(limit)) s" }
    }

    private func noteUnreachable(_ error: any Error) {
        if health.withLock({ $0.unreachable(at: .now) }) == .wentDown {
            logger.warning(
                "the database is unreachable: calls fail at once until it answers a probe",
                metadata: ["database": "\(configuration)", "error": "\(PostgresFailure.describe(error))"]
            )
        }
    }

    /// Connects afresh; on success starts a new pool in place of the old one.
    private func probe(_ what: String) async throws {
        do {
            let connection = try await PostgresMigrations.connect(configuration, logger: logger)
            _ = try await connection.run("SELECT 1", logger: logger)
            try? await connection.close()
        } catch {
            let since = health.withLock { state -> ContinuousClock.Instant in
                _ = state.probed(succeeded: false, at: .now)
                if case .down(let since, _) = state.state { return since }
                return .now
            }
            throw StoreError.unavailable.with(
                detail:
                    "\(what): the database has not answered for \(Self.seconds(ContinuousClock.now - since)) s (\(PostgresFailure.describe(error)))"
            )
        }
        try replacePool()
        if case .cameBack(let downFor) = health.withLock({ $0.probed(succeeded: true, at: .now) }) {
            logger.notice(
                "the database answers again",
                metadata: ["database": "\(configuration)", "down_seconds": "\(Self.seconds(downFor))"]
            )
        }
        // Pushes may have been queued by other nodes meanwhile.
        announceQueued()
    }

    static func seconds(_ duration: Duration) -> String {
        String(format: "%.1f", Double(duration.milliseconds) / 1000)
    }

    /// Tells the other stores on this database (other relay nodes) that pushes were queued.
    ///
    /// NOTIFY inside every ingest transaction would serialize all commits on the server's
    /// notification queue lock; instead one NOTIFY is sent (by `run()`'s announcer) after the
    /// commits that happened while none was on its way. A commit that lands after the flag is
    /// cleared sends its own, so none goes unannounced.
    func announceQueued() {
        guard !notifyPending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        notices.continuation.yield()
    }

    /// Sends the NOTIFYs `announceQueued` asks for, one at a time, until the store stops.
    func announce() async {
        for await _ in notices.stream {
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

    /// The connection failed or could not be made (not a statement the server refused).
    static func isConnectionFailure(_ error: any Error) -> Bool {
        if error is ConnectionPoolError { return true }
        guard let error = error as? PSQLError else { return false }
        return [.connectionError, .serverClosedConnection, .uncleanShutdown, .sslUnsupported].contains(error.code)
            || error.serverInfo?[.sqlState].map { $0.hasPrefix("08") || $0 == "57P01" || $0 == "57P03" } == true
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

/// A flag the closures of one call share: whether the call was answered.
final class RunFlag: Sendable {
    let value = Atomic<Bool>(false)
}

/// A task set after it is needed: cancelling before the set cancels at the set.
final class TaskBox: Sendable {
    private let state = Mutex<(task: Task<Void, Never>?, cancelled: Bool)>((nil, false))

    func set(_ task: Task<Void, Never>) {
        let cancel = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        if cancel { task.cancel() }
    }

    func cancel() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }
}

extension PostgresStore {
    /// `item` done in one of `batcher`'s batches, with the store's errors.
    func batched<Item, Outcome>(
        _ batcher: Batcher<Item, Outcome>,
        _ item: Item,
        _ what: String,
        _ handle: @escaping Batcher<Item, Outcome>.Handle
    ) async throws(StoreError) -> Outcome {
        do {
            return try await batcher.submit(item, handle: handle)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.corrupt.with(detail: "\(what): \(error)")
        }
    }
}
