import HeraldStorePostgres
import Logging

/// The parts of `init(layers:)` that read one section of the merged file and check it.
extension HeraldConfiguration {
    /// PostgreSQL when the file names a database (its url is then required); nil keeps SQLite.
    static func database(_ settings: ConfigurationFile.Database?) throws(HeraldServerError) -> Database? {
        guard let settings else { return nil }
        if let url = settings.url {
            var postgres: PostgresStoreConfiguration
            do {
                postgres = try PostgresStoreConfiguration(url: url)
            } catch {
                throw .configuration("--database: \(error.detail)")
            }
            if let size = settings.poolSize {
                guard (2...500).contains(size) else {
                    throw .configuration("database.pool_size must be between 2 and 500")
                }
                postgres.poolSize = size
            }
            if let seconds = settings.statementTimeout {
                guard (1...3600).contains(seconds) else {
                    throw .configuration("database.statement_timeout must be between 1 and 3600 seconds")
                }
                postgres.statementTimeout = .seconds(seconds)
            }
            return .postgres(postgres)
        }
        throw .configuration("database: the url is missing (postgres://user@host:port/database)")
    }

    static func logLevel(_ text: String) throws(HeraldServerError) -> Logger.Level {
        guard let level = Logger.Level(rawValue: text) else {
            throw .configuration("unknown log level '\(text)' (trace, debug, info, notice, warning, error, critical)")
        }
        return level
    }

    static func logFormat(_ text: String) throws(HeraldServerError) -> LogFormat {
        guard let format = LogFormat(rawValue: text) else {
            throw .configuration("unknown log format '\(text)' (text or json)")
        }
        return format
    }

    /// The remote providers `url` and `urls` name together, each once; nil when none is named.
    static func remoteProvider(_ settings: ConfigurationFile.Provider?) throws(HeraldServerError) -> RemoteProvider? {
        guard let settings else { return nil }
        var urls = settings.url.map { [$0] } ?? []
        for url in settings.urls ?? [] where !urls.contains(url) { urls.append(url) }
        for url in urls where !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            throw .configuration("--provider-url must be an http:// or https:// URL (got '\(url)')")
        }
        return urls.isEmpty ? nil : RemoteProvider(urls: urls, secretFile: settings.secretFile)
    }
}
