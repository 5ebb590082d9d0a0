import Foundation
import GRDB
public import HeraldStore

/// A consistent copy of a SQLite store, made while nodes keep using it (`herald store backup`).
///
/// SQLite's online backup copies every page inside one read transaction: in WAL mode a reader
/// sees one commit's state however many writes land meanwhile, and never blocks the writer. A
/// copy of the files (`cp herald.sqlite*`) made while a node runs can catch the database and its
/// WAL at different moments; this cannot. The copy is checked before it is called done.
public enum SQLiteBackup {
    /// What a finished copy holds.
    public struct Summary: Sendable, Equatable {
        /// The copy's size in bytes.
        public var bytes: Int64
        /// The schema migrations the copy has (the newest first is enough to tell versions apart).
        public var schema: String
        /// Pushes the copy has not finished (queued, or claimed when the copy was made).
        public var unfinishedPushes: Int
        /// Devices in the copy.
        public var devices: Int
    }

    /// Copies the store at `source` to `target`, a file that must not exist yet (made 0600, like
    /// the database). Throws `unavailable` naming the problem: no database, not a Herald one, a
    /// target in the way, or a copy that fails SQLite's integrity check (the target is removed).
    public static func copy(from source: String, to target: String) throws(StoreError) -> Summary {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw StoreError.unavailable.with(detail: "no SQLite database at \(source)")
        }
        guard !FileManager.default.fileExists(atPath: target) else {
            throw StoreError.unavailable.with(detail: "\(target) exists: a backup never overwrites a file")
        }
        var readOnly = GRDB.Configuration()
        readOnly.readonly = true
        // A writer's commit in progress holds the WAL briefly; wait for it rather than fail.
        readOnly.busyMode = .timeout(10)
        let from: DatabaseQueue
        do {
            from = try DatabaseQueue(path: source, configuration: readOnly)
            let isHerald = try from.read { db in
                try db.tableExists("grdb_migrations") && db.tableExists("outbox")
            }
            guard isHerald else { throw StoreError.unavailable.with(detail: "\(source) is not a Herald database") }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.unavailable.with(detail: "cannot open the SQLite database \(source): \(error)")
        }
        do {
            try PrivateFiles.prepareDatabase(at: target)
            let to = try DatabaseQueue(path: target)
            // All pages in one step: one read transaction, so one commit's state.
            try from.backup(to: to)
            var summary = try to.read { db -> Summary in
                let check = try String.fetchOne(db, sql: "PRAGMA quick_check") ?? "no answer"
                guard check == "ok" else {
                    throw StoreError.corrupt.with(detail: "the copy fails SQLite's check: \(check)")
                }
                let schema =
                    try String.fetchOne(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid DESC LIMIT 1")
                    ?? "none"
                let unfinished =
                    try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox WHERE state IN ('queued', 'sending')") ?? 0
                let devices = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM devices") ?? 0
                return Summary(bytes: 0, schema: schema, unfinishedPushes: unfinished, devices: devices)
            }
            try to.close()
            try from.close()
            summary.bytes =
                (try FileManager.default.attributesOfItem(atPath: target)[.size] as? NSNumber)?.int64Value ?? 0
            return summary
        } catch {
            try? FileManager.default.removeItem(atPath: target)
            for companion in [target + "-wal", target + "-shm"] {
                try? FileManager.default.removeItem(atPath: companion)
            }
            if let error = error as? StoreError { throw error }
            throw StoreError.unavailable.with(detail: "cannot back up \(source) to \(target): \(error)")
        }
    }
}
