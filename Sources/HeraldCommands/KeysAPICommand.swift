import ArgumentParser
import Foundation
import HeraldRelay
import HeraldServer
import HeraldStore
import Logging

extension KeysCommand {
    /// `herald keys api`: the backends' API keys, in the relay's store.
    struct API: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "api",
            abstract: "Make, list and revoke the backends' API keys (one app or admin, with scopes).",
            discussion: """
                Keys are kept in the relay's database (only a digest of each secret), so this \
                command runs beside running nodes: every node takes a new or revoked key within \
                \(RelayNode.keyRefreshSeconds) seconds, or at once on SIGHUP. Scopes: send \
                (messages, calls, broadcasts, callbacks), read (push status, listings, devices, \
                apps, the audit log), devices (activate, re-token, deactivate), apps (register \
                and change apps). The configured key (keys/api.key, HERALD_API_KEY) stays an \
                admin key with every scope.
                """,
            subcommands: [Create.self, List.self, Revoke.self]
        )
    }
}

/// Where the relay's data is: the same flags and configuration file as `herald serve`.
struct StoreLocationOptions: ParsableArguments {
    @Option(help: "The relay's configuration file (HERALD_CONFIG).")
    var config: String?

    @Option(help: "The relay's data directory, for SQLite (HERALD_DATA; default data).")
    var data: String?

    @Option(help: "The relay's PostgreSQL database, postgres://… (HERALD_DATABASE_URL).")
    var database: String?

    /// Opens the store, runs `work` on its keys, and closes it.
    func withKeys<T: Sendable>(_ work: (RelayKeys) async throws -> T) async throws -> T {
        try await withStore { _, keys in try await work(keys) }
    }

    /// Opens the store, runs `work` on it and its keys (which write the audit log's entries), and
    /// closes it.
    func withStore<T: Sendable>(_ work: (any HeraldStore, RelayKeys) async throws -> T) async throws -> T {
        var flags = ConfigurationFile()
        flags.data = data
        flags.database = ConfigurationFile.Database(url: database)
        let configuration = try RelayOptions.resolve(flags: flags, config: config)
        var logger = Logger(label: "herald.keys")
        logger.logLevel = .warning
        do {
            return try await HeraldServer.withStore(configuration, logger: logger) { store in
                try await work(store, RelayKeys(store: store, logger: logger))
            }
        } catch let error as HeraldServerError {
            throw ValidationError(error.message)
        } catch let error as RelayError {
            throw ValidationError(error.detail)
        }
    }
}

extension KeysCommand.API {
    /// `herald keys api create`.
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Make an API key and print its token (shown once, never stored)."
        )

        @Option(help: "The key's name, for the operator (letters, digits, '.', '-', '_').")
        var name: String

        @Option(help: "The app the key acts for (a registered app's id).")
        var app: String?

        @Flag(help: "An admin key: acts for every app.")
        var admin = false

        @Option(help: "Comma-separated scopes: send, read, devices, apps.")
        var scopes: String = "send,read"

        @Option(help: "Messages per second the key may send (a token bucket); only the app's quota when not given.")
        var rate: Double?

        @Option(help: "How many messages the key may send at once (the bucket's size; default: one second's rate).")
        var burst: Int?

        @Flag(help: "Print the key as one JSON object.")
        var json = false

        @OptionGroup var store: StoreLocationOptions

        func validate() throws {
            guard admin != (app != nil) else { throw ValidationError("give either --app APP or --admin") }
            for name in scopes.split(separator: ",") where APIScope(rawValue: String(name)) == nil {
                let known = APIScope.allCases.map(\.rawValue).joined(separator: ", ")
                throw ValidationError("unknown scope '\(name)' (known: \(known))")
            }
        }

        func run() async throws {
            let key = RelayKeys.NewKey(
                name: name,
                appID: app,
                scopes: APIKeyRecord.scopes(from: scopes),
                ratePerSecond: rate,
                burst: burst
            )
            let (record, token) = try await store.withKeys { try await $0.create(key, actor: "cli") }
            if json {
                print(try KeyListing(record, token: token.text).json())
            } else {
                print("made API key \(record.id) '\(record.name)' for \(record.appID ?? "every app (admin)")")
                print("  scopes: \(record.scopesText)")
                if let rate = record.ratePerSecond { print("  rate:   \(rate)/s, burst \(record.burst ?? 0)") }
                print("  token:  \(token.text)")
                print("The token is shown once: give it to the backend now (authorization: Bearer <token>).")
            }
        }
    }

    /// `herald keys api list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the API keys (never their secrets), revoked ones included."
        )

        @Flag(help: "Print the keys as a JSON array.")
        var json = false

        @OptionGroup var store: StoreLocationOptions

        func run() async throws {
            let keys = try await store.withKeys { try await $0.keys() }
            if json {
                print(try KeyListing.json(keys.map { KeyListing($0) }))
                return
            }
            if keys.isEmpty { print("no API keys (the configured key, keys/api.key, is an admin key)") }
            for key in keys {
                let state = key.revokedAt.map { "revoked " + KeyListing.time($0) } ?? "valid"
                let rate = key.ratePerSecond.map { "  \($0)/s burst \(key.burst ?? 0)" } ?? ""
                print(
                    "\(key.id)  \(key.name)  \(key.appID ?? "admin")  \(key.scopesText)  \(state)\(rate)"
                )
            }
        }
    }

    /// `herald keys api revoke`.
    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke",
            abstract: "Revoke an API key: every node refuses it within seconds."
        )

        @Argument(help: "The key's id (16 hex characters, from `herald keys api list`).")
        var id: String

        @OptionGroup var store: StoreLocationOptions

        func run() async throws {
            guard try await store.withKeys({ try await $0.revoke(id: id, actor: "cli") }) else {
                throw ValidationError("no valid API key \(id) (see herald keys api list)")
            }
            print("revoked API key \(id)")
        }
    }
}

/// A key as `herald keys api --json` prints it: never the digest; the token only when just made.
struct KeyListing: Encodable {
    var id: String
    var name: String
    var app: String?
    var scopes: [String]
    var ratePerSecond: Double?
    var burst: Int?
    var createdAt: String
    var revokedAt: String?
    var token: String?

    init(_ key: APIKeyRecord, token: String? = nil) {
        id = key.id
        name = key.name
        app = key.appID
        scopes = key.scopes.sorted().map(\.rawValue)
        ratePerSecond = key.ratePerSecond
        burst = key.burst
        createdAt = Self.time(key.createdAt)
        revokedAt = key.revokedAt.map(Self.time)
        self.token = token
    }

    enum CodingKeys: String, CodingKey {
        case id, name, app, scopes, burst, token
        case ratePerSecond = "rate_per_second"
        case createdAt = "created_at"
        case revokedAt = "revoked_at"
    }

    static func time(_ milliseconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000).formatted(.iso8601)
    }

    func json() throws -> String { try Self.json(self) }

    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
