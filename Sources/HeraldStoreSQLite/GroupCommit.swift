import GRDB
import Synchronization

/// Commits many small writes in one SQLite transaction.
///
/// A durable commit costs an fsync; at thousands of ingests per second that fsync, not the
/// writes, is the limit. Writers queue here; while one transaction commits, the next writers wait
/// and then share the next transaction. If one write fails, the transaction is run again with each
/// write in its own savepoint, so one failing write does not undo the others; no caller hears
/// "done" before the transaction holding its write has committed.
final class GroupCommit: Sendable {
    private let pool: DatabasePool
    private let maximumBatch: Int
    private let state = Mutex(State())

    private struct State {
        var pending: [Job] = []
        var flushing = false
    }

    /// One queued write and how to answer its caller.
    private final class Job: @unchecked Sendable {
        // Set on the writer queue inside the transaction, read after it committed.
        let work: (Database) throws -> any Sendable
        let answer: (Result<any Sendable, any Error>) -> Void
        var result: Result<any Sendable, any Error>?

        init(
            work: @escaping (Database) throws -> any Sendable,
            answer: @escaping (Result<any Sendable, any Error>) -> Void
        ) {
            self.work = work
            self.answer = answer
        }
    }

    init(pool: DatabasePool, maximumBatch: Int = 512) {
        self.pool = pool
        self.maximumBatch = maximumBatch
    }

    /// Runs `work` inside a shared transaction and returns once that transaction committed.
    func write<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let value: any Sendable = try await withCheckedThrowingContinuation { continuation in
            let job = Job(work: { db in try work(db) }, answer: { continuation.resume(with: $0) })
            let start = state.withLock { state -> Bool in
                state.pending.append(job)
                if state.flushing { return false }
                state.flushing = true
                return true
            }
            if start {
                Task { await self.flush() }
            }
        }
        guard let typed = value as? T else { throw StoreErrorBox.unexpectedType }
        return typed
    }

    private func flush() async {
        while true {
            let jobs = state.withLock { state -> [Job] in
                let taken = Array(state.pending.prefix(maximumBatch))
                state.pending.removeFirst(taken.count)
                if taken.isEmpty { state.flushing = false }
                return taken
            }
            if jobs.isEmpty { return }
            do {
                do {
                    // Usually every write succeeds: run them all in one transaction, no savepoints.
                    try await pool.write { db in
                        for job in jobs { job.result = .success(try job.work(db)) }
                    }
                } catch {
                    // One failed, and the transaction was rolled back: run each in its own
                    // savepoint so the others still commit.
                    try await pool.write { db in
                        for job in jobs {
                            do {
                                var value: (any Sendable)?
                                try db.inSavepoint {
                                    value = try job.work(db)
                                    return .commit
                                }
                                job.result = .success(value!)
                            } catch {
                                job.result = .failure(error)
                            }
                        }
                    }
                }
                for job in jobs { job.answer(job.result ?? .failure(StoreErrorBox.unexpectedType)) }
            } catch {
                // The transaction itself failed: nothing of it is durable.
                for job in jobs { job.answer(.failure(error)) }
            }
        }
    }
}

enum StoreErrorBox: Error {
    case unexpectedType
}
