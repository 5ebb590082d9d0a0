import ArgumentParser
import Foundation
import HeraldStore
import HeraldStorePostgres
import HeraldStoreSQLite
import Logging

/// `herald store`: the relay's data, between storage engines.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Back up a relay's data, or move it between storage engines.",
        subcommands: [Backup.self, Migrate.self]
    )
}

extension StoreCommand {
    /// `herald store migrate`: a stopped SQLite node's data into an empty PostgreSQL database.
    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "migrate",
            abstract: "Copy a SQLite deployment into an empty PostgreSQL database.",
            discussion: """
                Copies apps, devices (tokens, sealed keys, credentials), presence, messages kept for \
                fetch-by-id, idempotency keys with their receipts, every push not finished yet \
                (queued again, with its id, priority, attempts, expiry and history) and chats with \
                their transcripts and disconnects. Finished pushes and their history are not copied. \
                Sealed values are copied sealed: start the PostgreSQL nodes with the same master key. \
                Stop the SQLite node first (the copy refuses a database another process has open). \
                Everything is written in one transaction: a copy that fails writes no record \
                and can be run again. It refuses a database that holds Herald data.
                """
        )

        @Option(help: "The database to copy from: sqlite:PATH (a node's <data>/herald.sqlite).")
        var from: String

        @Option(help: "The database to copy into: postgres://user[:password]@host[:port]/database[?schema=…].")
        var to: String

        @Flag(help: "Read the SQLite database and print what would be copied; connect to nothing, write nothing.")
        var dryRun = false

        func run() async throws {
            let path = try Self.sqlitePath(from)
            let target = try PostgresStoreConfiguration(url: to)
            let source = try SQLiteExport(path: path)
            let tally = try await source.exportTally()
            if dryRun {
                print("would copy from sqlite:\(path) to \(target):")
                print(Self.lines(tally))
                return
            }
            var logger = Logger(label: "herald.store")
            logger.logLevel = .warning
            let store = try await PostgresStore.open(configuration: target, logger: logger)
            do {
                let written = try await store.importAll(from: source, batchSize: 500)
                let held = try await store.importTally()
                await store.close()
                print("copied from sqlite:\(path) to \(target):")
                print(Self.lines(written))
                guard held == tally else {
                    throw StoreCommandError.mismatch(
                        "PostgreSQL holds \(held) after the copy, the SQLite database \(tally)"
                    )
                }
                print("checked: PostgreSQL holds as many records of each kind as the SQLite database")
            } catch {
                await store.close()
                throw error
            }
        }

        /// `sqlite:PATH` (also `sqlite://PATH`) → `PATH`.
        static func sqlitePath(_ text: String) throws(StoreCommandError) -> String {
            guard text.hasPrefix("sqlite:") else {
                throw .usage("--from must be sqlite:PATH (the SQLite database to copy), not \(text)")
            }
            var path = String(text.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path.removeFirst(2) }
            guard !path.isEmpty else { throw .usage("--from names no file: sqlite:PATH") }
            return path
        }

        static func lines(_ tally: StoreTally) -> String {
            StoreRecordKind.allCases.map { kind in
                "  " + kind.rawValue.padding(toLength: 18, withPad: " ", startingAt: 0) + "\(tally[kind])"
            }.joined(separator: "\n")
        }
    }
}

extension StoreCommand {
    /// `herald store backup`: a consistent copy of a SQLite node's database while it runs.
    struct Backup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "backup",
            abstract: "Copy a SQLite node's database to a new file while the node runs.",
            discussion: """
                SQLite's online backup: one consistent state of the database, however many pushes \
                the node writes meanwhile, checked with SQLite's quick_check. Sealed values stay \
                sealed: keep the master key (keys/master.key or HERALD_MASTER_KEY) with the backup, \
                apart from it, or the copy cannot be used. To restore, stop the node and put the copy \
                at <data>/herald.sqlite (no -wal or -shm file beside it). For PostgreSQL, use pg_dump.
                """
        )

        @Option(help: "The node's data directory (its database is <data>/herald.sqlite). (HERALD_DATA; default data)")
        var data: String?

        @Option(help: "The file to write; it must not exist.")
        var to: String

        func run() async throws {
            let directory =
                data ?? ProcessInfo.processInfo.environment["HERALD_DATA"].flatMap { $0.isEmpty ? nil : $0 }
                ?? "data"
            let source = (directory as NSString).appendingPathComponent("herald.sqlite")
            let summary = try SQLiteBackup.copy(from: source, to: to)
            let size = ByteCountFormatter.string(fromByteCount: summary.bytes, countStyle: .file)
            print(
                "backed up \(source) to \(to): \(size), schema \(summary.schema), \(summary.devices) devices, "
                    + "\(summary.unfinishedPushes) unfinished pushes; quick_check ok"
            )
            print("keep the master key with it: the sealed values in the copy need it")
        }
    }
}

/// A refusal of `herald store`, printed as one line.
struct StoreCommandError: Error, CustomStringConvertible {
    private enum Code {
        case usage
        case mismatch
    }

    private let code: Code
    let description: String

    /// An argument that does not say what it must.
    static func usage(_ detail: String) -> Self { Self(code: .usage, description: detail) }
    /// The databases disagree after a copy.
    static func mismatch(_ detail: String) -> Self { Self(code: .mismatch, description: detail) }
}
