import GRDB
import HeraldBatching

/// Commits many small writes in one SQLite transaction.
///
/// A durable commit costs an fsync; at thousands of ingests per second that fsync, not the
/// writes, is the limit. Writers queue in a `Batcher`; while one transaction commits, the next
/// writers wait and then share the next transaction. If one write fails, the transaction is run
/// again with each write in its own savepoint, so one failing write does not undo the others; no
/// caller hears "done" before the transaction holding its write has committed.
final class GroupCommit: Sendable {
    /// One queued write.
    private struct Job: Sendable {
        let work: @Sendable (Database) throws -> any Sendable
    }

    private let pool: DatabasePool
    private let batcher: Batcher<Job, any Sendable>

    init(pool: DatabasePool, maximumBatch: Int = 512) {
        self.pool = pool
        // One transaction at a time: SQLite has one writer.
        batcher = Batcher(rules: .init(maxInFlight: 1, maxItems: maximumBatch))
    }

    /// Runs `work` inside a shared transaction and returns once that transaction committed.
    func write<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let value = try await batcher.submit(Job(work: { db in try work(db) })) { [pool] jobs in
            await Self.commit(jobs, pool: pool)
        }
        guard let typed = value as? T else { throw StoreErrorBox.unexpectedType }
        return typed
    }

    private static func commit(_ jobs: [Job], pool: DatabasePool) async -> [Result<any Sendable, any Error>] {
        do {
            // Usually every write succeeds: run them all in one transaction, no savepoints.
            return try await pool.write { db in try jobs.map { .success(try $0.work(db)) } }
        } catch {
            do {
                // One failed, and the transaction was rolled back: run each in its own savepoint
                // so the others still commit.
                return try await pool.write { db in
                    jobs.map { job in
                        Result {
                            var value: (any Sendable)?
                            try db.inSavepoint {
                                value = try job.work(db)
                                return .commit
                            }
                            guard let value else { throw StoreErrorBox.unexpectedType }
                            return value
                        }
                    }
                }
            } catch {
                // The transaction itself failed: nothing of it is durable.
                return jobs.map { _ in .failure(error) }
            }
        }
    }
}

enum StoreErrorBox: Error {
    case unexpectedType
}
