import Foundation
public import HeraldStore
import NIOSSL
import PostgresNIO

/// Where the PostgreSQL store connects and how it uses the server.
public struct PostgresStoreConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// How the connection is encrypted (`sslmode` in the URL).
    public enum TLSMode: String, Sendable, Hashable, CaseIterable {
        /// Plain TCP: a database on loopback or a private network.
        case disable
        /// TLS when the server offers it, plain otherwise (libpq's default).
        case prefer
        /// TLS or no connection; the server's certificate is checked against the system's CAs.
        case require
    }

    public var host: String
    public var port: Int = 5432
    public var user: String
    /// Never logged.
    public var password: String?
    public var database: String
    /// The schema Herald's tables live in (`public`); another one lets several Heralds, or tests,
    /// share a database.
    public var schema: String = "public"
    public var tls: TLSMode = .prefer
    /// Connections for statements each node keeps at most (10): one per dispatcher worker, and
    /// the rest for ingest and reads. The connections held for wake-ups (`listeningConnections`)
    /// come on top; the server's `max_connections` must cover every node's pool and those.
    public var poolSize: Int = 10

    /// The connections a store holds open for `LISTEN` at most, beside `poolSize`: pushes queued
    /// elsewhere, live messages handed to the node, chat events announced to it. Counted apart so
    /// that the smallest pool still runs statements while all three listen.
    public static let listeningConnections = 3
    /// The longest a statement may run before the server cancels it (5 s; Herald's statements
    /// take milliseconds): a stuck statement fails the request instead of holding a connection.
    public var statementTimeout: Duration = .seconds(5)
    /// How long opening a connection, or waiting for one from the pool, may take (3 s).
    public var connectTimeout: Duration = .seconds(3)

    public init(host: String, port: Int = 5432, user: String, password: String? = nil, database: String) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
    }

    /// Reads `postgres://user[:password]@host[:port]/database[?sslmode=…&schema=…]` (also
    /// `postgresql://`). The user defaults to `postgres`, the database to the user's name.
    public init(url text: String) throws(StoreError) {
        guard let url = URLComponents(string: text), let scheme = url.scheme,
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw StoreError.unavailable.with(
                detail: "not a PostgreSQL URL (postgres://user@host:port/database): \(Self.redacted(text))"
            )
        }
        guard let host = url.host, !host.isEmpty else {
            throw StoreError.unavailable.with(detail: "the PostgreSQL URL names no host: \(Self.redacted(text))")
        }
        let user = url.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        let path = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        self.init(
            host: host,
            port: url.port ?? 5432,
            user: user,
            password: url.password.flatMap { $0.removingPercentEncoding },
            database: path.isEmpty ? user : (path.removingPercentEncoding ?? path)
        )
        for item in url.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    throw StoreError.unavailable.with(
                        detail: "sslmode=\(value) in the PostgreSQL URL: use disable, prefer or require"
                    )
                }
                tls = mode
            case "schema":
                guard Self.isPlainName(value) else {
                    throw StoreError.unavailable.with(
                        detail: "schema=\(value) in the PostgreSQL URL: letters, digits and _ only"
                    )
                }
                schema = value
            default:
                throw StoreError.unavailable.with(
                    detail: "\(item.name) in the PostgreSQL URL is not a known option (sslmode, schema)"
                )
            }
        }
    }

    /// Where it connects, for banners and errors (no password).
    public var description: String {
        "postgres://\(user)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
            + (schema == "public" ? "" : "?schema=\(schema)")
    }

    /// A URL with its password replaced, for error messages.
    static func redacted(_ text: String) -> String {
        guard var url = URLComponents(string: text), url.password != nil else { return text }
        url.password = "***"
        return url.string ?? "(unreadable URL)"
    }

    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 63
            && name.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && CharacterSet.alphanumerics.contains($0)) }
            && !(name.first?.isNumber ?? true)
    }

    var clientConfiguration: PostgresClient.Configuration {
        let tlsSetting: PostgresClient.Configuration.TLS
        switch tls {
        case .disable: tlsSetting = .disable
        case .prefer: tlsSetting = .prefer(.makeClientConfiguration())
        case .require: tlsSetting = .require(.makeClientConfiguration())
        }
        var configuration = PostgresClient.Configuration(
            host: host,
            port: port,
            username: user,
            password: password,
            database: database,
            tls: tlsSetting
        )
        configuration.options.maximumConnections = max(2, poolSize) + Self.listeningConnections
        configuration.options.connectTimeout = connectTimeout
        configuration.options.additionalStartupParameters = startupParameters
        return configuration
    }

    /// Set on every connection at login: the schema, and the statement timeout.
    var startupParameters: [(String, String)] {
        [
            ("search_path", schema),
            ("statement_timeout", "\(max(1, statementTimeout.milliseconds))"),
            ("application_name", applicationName),
        ]
    }

    /// How the store's sessions name themselves to the server (`pg_stat_activity`): the nodes of
    /// one schema as `herald:<schema>`, so `herald store migrate` can tell that a node still runs
    /// on the data it would copy (`PostgresExport`).
    var applicationName: String { Self.applicationName(node: !forExport, schema: schema) }

    /// Set by `PostgresExport` on the configuration of its own sessions.
    var forExport = false

    /// `herald:<schema>` for a node's sessions, `herald-export:<schema>` for an export's; at most
    /// the 63 bytes the server keeps.
    static func applicationName(node: Bool, schema: String) -> String {
        String(((node ? "herald:" : "herald-export:") + schema).prefix(63))
    }
}
