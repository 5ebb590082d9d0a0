import ArgumentParser
import HeraldStore
import HeraldStorePostgres
import HeraldStoreSQLite
import Logging

/// `herald store`: the relay's data, between storage engines.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Move a relay's data between storage engines.",
        subcommands: [Migrate.self]
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
