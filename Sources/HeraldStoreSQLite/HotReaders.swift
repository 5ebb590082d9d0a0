import GRDB
import Synchronization

/// Read-only connections of their own for the read every ingest makes, run on the calling
/// thread (`SQLiteStore.readNow`).
///
/// Why not the pool's readers: an async read (`DatabasePool.read`) takes a reader and then needs
/// a cooperative thread to run its block, so a reader can be held by a task that is waiting for a
/// thread. A synchronous read that waits for a pool reader on a cooperative thread can then block
/// every thread of the pool (there are as many as cores) while the readers wait for one of them:
/// `herald serve` stopped answering under the relay benchmark that way. These connections are
/// used only by synchronous reads that never suspend, so a caller waits at most for another
/// caller's running statement.
final class HotReaders: Sendable {
    private let queues: [DatabaseQueue]
    private let next = Atomic<Int>(0)

    /// Opens `count` read-only connections on the database at `path` (already created, in WAL
    /// mode, by the store's pool).
    init(path: String, count: Int, configuration: GRDB.Configuration) throws {
        var configuration = configuration
        configuration.readonly = true
        queues = try (0..<max(1, count)).map { _ in try DatabaseQueue(path: path, configuration: configuration) }
    }

    /// Runs `work` on one of the connections, outside a transaction (one statement reads one
    /// snapshot anyway).
    func read<T>(_ work: (Database) throws -> T) throws -> T {
        let index = next.add(1, ordering: .relaxed).oldValue % queues.count
        return try queues[index].inDatabase(work)
    }
}
