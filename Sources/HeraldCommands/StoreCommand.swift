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
    /// `herald store migrate`: a stopped SQLite node's data into an empty PostgreSQL database, or
    /// back: a stopped cluster's PostgreSQL data into a new SQLite file.
    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "migrate",
            abstract:
                "Copy a SQLite deployment into an empty PostgreSQL database, or a PostgreSQL one into a new SQLite file.",
            discussion: """
                Copies apps, devices (tokens, sealed keys, credentials), presence, messages kept for \
                fetch-by-id, idempotency keys with their receipts, every push not finished yet \
                (queued again, with its id, priority, attempts, expiry and history), chats with \
                their transcripts and disconnects, callbacks, calls, webhook events not delivered \
                yet, the backends' API keys (revoked ones too, with their scopes and rates; as the \
                digests they are stored as), the audit log, messages held for a user without a \
                device (released once that user's first device activates on the new nodes), and the \
                console's operator accounts (as their passwords' hashes; their sessions are not \
                copied: operators sign in again). \
                Finished pushes and their history are not copied. Sealed values are copied \
                sealed: start the new nodes with the same master key. Stop the nodes first: the copy \
                refuses a SQLite database another process has open, and a PostgreSQL schema a node \
                is connected to. Everything is written in one transaction: a copy that fails writes \
                no record and can be run again. It refuses a PostgreSQL database that holds Herald \
                data, and a SQLite file that exists.
                """
        )

        @Option(
            help:
                "The database to copy from: sqlite:PATH (a node's <data>/herald.sqlite), or postgres://… (back to SQLite)."
        )
        var from: String

        @Option(
            help:
                "The database to copy into: postgres://user[:password]@host[:port]/database[?schema=…], or sqlite:PATH (a new file)."
        )
        var to: String

        @Flag(help: "Read the source and print what would be copied; write nothing.")
        var dryRun = false

        func run() async throws {
            var logger = Logger(label: "herald.store")
            logger.logLevel = .warning
            if Self.isPostgres(from) {
                try await backToSQLite(logger: logger)
                return
            }
            let path = try Self.sqlitePath(from, option: "--from")
            let target = try PostgresStoreConfiguration(url: to)
            let source = try SQLiteExport(path: path)
            let tally = try await source.exportTally()
            if dryRun {
                print("would copy from sqlite:\(path) to \(target):")
                print(Self.lines(tally))
                return
            }
            let (written, held) = try await PostgresStore.withOpen(configuration: target, logger: logger) { store in
                (try await store.importAll(from: source, batchSize: 500), try await store.importTally())
            }
            try Self.report(
                from: "sqlite:\(path)",
                to: "\(target)",
                tally,
                written: written,
                held: held,
                checked: ("PostgreSQL", "the SQLite database")
            )
        }

        /// PostgreSQL into a new SQLite file: a way back for a deployment that moved.
        private func backToSQLite(logger: Logger) async throws {
            let source = try PostgresStoreConfiguration(url: from)
            let path = try Self.sqlitePath(to, option: "--to")
            guard !FileManager.default.fileExists(atPath: path) else {
                throw StoreCommandError.usage("\(path) exists: the copy goes into a new SQLite file")
            }
            let copied = try await PostgresExport.withOpen(configuration: source, logger: logger) {
                export -> (StoreTally, written: StoreTally, held: StoreTally)? in
                let tally = try await export.exportTally()
                if dryRun {
                    print("would copy from \(source) to sqlite:\(path):")
                    print(Self.lines(tally))
                    return nil
                }
                let (written, held) = try await Self.importIntoNewFile(path, from: export, logger: logger)
                return (tally, written, held)
            }
            guard case let (tally, written, held)? = copied else { return }
            try Self.report(
                from: "\(source)",
                to: "sqlite:\(path)",
                tally,
                written: written,
                held: held,
                checked: ("the SQLite file", "PostgreSQL")
            )
        }

        /// Creates the file, imports into it, and removes it again if the import fails (its
        /// store released first), so the copy can be run again.
        private static func importIntoNewFile(
            _ path: String,
            from export: PostgresExport,
            logger: Logger
        ) async throws -> (written: StoreTally, held: StoreTally) {
            do {
                let store = try SQLiteStore(configuration: SQLiteStore.Configuration(path: path), logger: logger)
                let written = try await store.importAll(from: export, batchSize: 500)
                return (written, try await store.importTally())
            } catch {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
                throw error
            }
        }

        private static func report(
            from source: String,
            to target: String,
            _ tally: StoreTally,
            written: StoreTally,
            held: StoreTally,
            checked names: (target: String, source: String)
        ) throws {
            print("copied from \(source) to \(target):")
            print(lines(written))
            guard held == tally else {
                throw StoreCommandError.mismatch(
                    "\(names.target) holds \(held) after the copy, \(names.source) \(tally)"
                )
            }
            print("checked: \(names.target) holds as many records of each kind as \(names.source)")
        }

        static func isPostgres(_ text: String) -> Bool {
            text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
        }

        /// `sqlite:PATH` (also `sqlite://PATH`) → `PATH`.
        static func sqlitePath(_ text: String, option: String = "--from") throws(StoreCommandError) -> String {
            guard text.hasPrefix("sqlite:") else {
                throw .usage(
                    option == "--from"
                        ? "--from must be sqlite:PATH (the SQLite database to copy) or postgres://…, not \(text)"
                        : "--to must be sqlite:PATH (a new SQLite file) when --from is PostgreSQL, not \(text)"
                )
            }
            var path = String(text.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path.removeFirst(2) }
            guard !path.isEmpty else { throw .usage("\(option) names no file: sqlite:PATH") }
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
