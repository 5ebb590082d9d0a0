import HeraldStore
public import Logging
import PostgresNIO
public import ServiceLifecycle
import Synchronization

/// The store's long-lived work, run by its `run()` as postgres-nio's `PostgresClient.run()` is:
/// by its owner, under a `ServiceGroup` (first to start, last to stop), never in a task of its
/// own. Calls made before `run()` runs wait for it.
extension PostgresStore: Service {
    /// Runs the connection pool (and each fresh one after an outage), the calls' watchdog and
    /// the NOTIFYs for other nodes, until a graceful shutdown, `close()` or cancellation; then
    /// closes every connection: calls made afterwards fail with `unavailable`.
    public func run() async throws {
        let starts = running.withLock { state -> Bool in
            guard case .idle = state.phase else { return false }
            state.phase = .running
            return true
        }
        // Closed before it ran, or run a second time: nothing of its own to run.
        guard starts else { return }
        let watchdog = watchdog
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await watchdog.run() }
                group.addTask { await self.announce() }
                // Ends when the store stops (and on cancellation).
                for await pool in poolsToRun.stream {
                    group.addTask { await pool.run() }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.stop()
        }
        // Cancelled rather than shut down: closed all the same.
        stop()
        finished.open()
    }

    /// Stops `run()` (as a graceful shutdown does) and returns once it has closed every
    /// connection; a store whose `run()` never ran is closed at once.
    public func close() async {
        if stop() { await finished.wait() }
    }

    /// Opens the store, runs it while `body` runs, and closes it after, also when `body` throws:
    /// for a command or a test doing one piece of work on the database.
    public static func withOpen<T: Sendable>(
        configuration: PostgresStoreConfiguration,
        logger: Logger,
        _ body: (PostgresStore) async throws -> T
    ) async throws -> T {
        let store = try await open(configuration: configuration, logger: logger)
        return try await store.whileRunning { try await body(store) }
    }

    /// Runs the store while `body` runs, then closes it (also when `body` throws).
    public func whileRunning<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self, returning: T.self) { group in
            group.addTask { try await self.run() }
            do {
                let value = try await body()
                await close()
                try await group.waitForAll()
                return value
            } catch {
                await close()
                try? await group.waitForAll()
                throw error
            }
        }
    }

    /// Marks the store closed and ends `run()`'s loops; answers whether `run()` was running.
    @discardableResult
    func stop() -> Bool {
        let (wasRunning, pool) = running.withLock { state -> (Bool, Pool) in
            let wasRunning = state.phase == .running
            state.phase = .closed
            return (wasRunning, state.pool)
        }
        poolsToRun.continuation.finish()
        notices.continuation.finish()
        // Calls waiting for a pool that will never run go on, and find the store closed.
        pool.started.open()
        return wasRunning
    }

    /// The client of the pool that runs now, once it runs; `unavailable` once the store is closed.
    func runningClient(_ what: String) async throws(StoreError) -> PostgresClient {
        let pool = running.withLock { $0.pool }
        await pool.started.wait()
        guard running.withLock({ $0.phase != .closed }) else {
            throw StoreError.unavailable.with(detail: "\(what): the store is closed")
        }
        return pool.client
    }

    /// Puts a fresh pool in place of the current one (whose reconnect backoff may still run after
    /// an outage) and has `run()` run it; the old pool's run ends.
    func replacePool() throws(StoreError) {
        let fresh = Pool(configuration, logger: logger)
        let old = try running.withLock { (state) throws(StoreError) -> Pool in
            guard state.phase != .closed else { throw StoreError.unavailable.with(detail: "the store is closed") }
            defer { state.pool = fresh }
            return state.pool
        }
        poolsToRun.continuation.yield(fresh)
        old.retired.open()
    }
}

extension PostgresStore {
    /// The pool in use and where the store is in its life.
    struct Running: Sendable {
        enum Phase: Sendable, Equatable {
            /// Opened; `run()` has not run yet (calls wait for it).
            case idle
            case running
            /// Closed, or shut down: calls fail with `unavailable`.
            case closed
        }

        var pool: Pool
        var phase = Phase.idle
    }

    /// A connection pool: run by the store's `run()`, until a fresh one replaces it when the
    /// database comes back after an outage, or the store stops.
    struct Pool: Sendable {
        let client: PostgresClient
        /// Opened once its client runs: a lease asked before would wait, with a warning.
        let started = Latch()
        /// Opened when a fresh pool replaced this one.
        let retired = Latch()

        init(_ configuration: PostgresStoreConfiguration, logger: Logger) {
            client = PostgresClient(configuration: configuration.clientConfiguration, backgroundLogger: logger)
        }

        /// Runs the client until the pool is retired or the task is cancelled (which closes its
        /// connections).
        func run() async {
            await withDiscardingTaskGroup { group in
                let client = client
                let started = started
                group.addTask {
                    started.open()
                    await client.run()
                }
                await retired.wait()
                group.cancelAll()
            }
        }
    }
}

/// Opens once; whoever waits, before or after, goes on from then (or when its task is
/// cancelled).
final class Latch: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isOpen = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        let id = state.withLock { state -> UInt64? in
            guard !state.isOpen else { return nil }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.isOpen || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
