import ArgumentParser
import Foundation
import HeraldAdapters
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldRelayHTTP
import HeraldStore
import HeraldStoreSQLite
import Logging

/// Options shared by `herald serve` and `herald relay`. Each is taken from the command line, else
/// from its environment variable, else from `--config`, else from its default.
struct RelayOptions: ParsableArguments {
    @Option(help: "A JSON configuration file (see docs/relay.md). (HERALD_CONFIG)")
    var config: String?

    @Option(help: "The address the relay listens on. (HERALD_HOST; default 127.0.0.1)")
    var host: String?

    @Option(help: "The relay's HTTP port; 0 picks one. (HERALD_PORT; default 8080)")
    var port: Int?

    @Option(help: "The directory of the SQLite database, data/herald.sqlite. (HERALD_DATA; default data)")
    var data: String?

    @Option(
        name: .customLong("keys-dir"),
        help:
            "Where keys live: master.key, api.key, AuthKey_*, fcm-service-account.json, the sandbox CA. (HERALD_KEYS_DIR; default keys)"
    )
    var keysDir: String?

    @Option(
        name: .customLong("app"),
        help: "Register an app, as BUNDLE_ID or BUNDLE_ID:TEAM_ID (repeatable; added to the file's apps)."
    )
    var apps: [String] = []

    @Option(
        name: .customLong("workers"),
        help: "Dispatcher loops draining the outbox. (HERALD_WORKERS; default 2)"
    )
    var workers: Int?

    @Option(name: .customLong("batch-size"), help: "Pushes one dispatcher loop claims at a time. (default 256)")
    var batchSize: Int?

    @Option(
        name: .customLong("presence-ttl"),
        help: "Seconds a heartbeat counts as current when it names no ttl. (default 60)"
    )
    var presenceTTL: Int?

    @Option(
        name: .customLong("chat-push-delay"),
        help: "Seconds a chat's first push waits after the app went to the background; 0 pushes at once. (default 30)"
    )
    var chatPushDelay: Int?

    @Flag(
        name: .customLong("no-sync"),
        help: "Commit without fsync (survives a process crash, not a power cut). Default: every commit is synced."
    )
    var noSync = false

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func validate() throws {
        if let port, !(0...65_535).contains(port) { throw ValidationError("--port must be between 0 and 65535") }
        if let workers, !(1...64).contains(workers) { throw ValidationError("--workers must be between 1 and 64") }
        if let batchSize, !(1...1000).contains(batchSize) {
            throw ValidationError("--batch-size must be between 1 and 1000")
        }
        if let chatPushDelay, !(0...3600).contains(chatPushDelay) {
            throw ValidationError("--chat-push-delay must be between 0 and 3600")
        }
        if let presenceTTL, !(1...3600).contains(presenceTTL) {
            throw ValidationError("--presence-ttl must be between 1 and 3600")
        }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("unknown --log-level '\(logLevel)'")
        }
        for app in apps where Self.parseApp(app) == nil {
            throw ValidationError("--app must be BUNDLE_ID or BUNDLE_ID:TEAM_ID (got '\(app)')")
        }
    }

    static func parseApp(_ text: String) -> (bundleID: String, teamID: String?)? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), !parts[0].isEmpty else { return nil }
        if parts.count == 2, parts[1].isEmpty { return nil }
        return (String(parts[0]), parts.count == 2 ? String(parts[1]) : nil)
    }

    /// Everything resolved: flags, then environment, then file, then defaults.
    func resolve() throws -> ResolvedRelayOptions {
        let file = try ServeConfigurationFile.load(path: config ?? ServeEnvironment.string("HERALD_CONFIG"))
        var resolved = ResolvedRelayOptions(file: file)
        resolved.host = host ?? ServeEnvironment.string("HERALD_HOST") ?? file.host ?? "127.0.0.1"
        resolved.port = try port ?? ServeEnvironment.int("HERALD_PORT") ?? file.port ?? 8080
        resolved.data = data ?? ServeEnvironment.string("HERALD_DATA") ?? file.data ?? "data"
        resolved.keysDir = keysDir ?? ServeEnvironment.string("HERALD_KEYS_DIR") ?? file.keysDir ?? "keys"
        resolved.workers = try workers ?? ServeEnvironment.int("HERALD_WORKERS") ?? file.dispatcher?.workers ?? 2
        resolved.batchSize = batchSize ?? file.dispatcher?.batchSize ?? 256
        resolved.presenceTTL = presenceTTL ?? file.presenceTTL ?? 60
        resolved.messageRetention = file.messageRetention ?? 7 * 24 * 60 * 60
        resolved.chatPushDelay = chatPushDelay ?? file.chat?.firstPushDelay ?? 30
        guard (0...3600).contains(resolved.chatPushDelay) else {
            throw ValidationError("chat.first_push_delay must be between 0 and 3600")
        }
        if let types = file.chat?.filteredTypes { resolved.chatFilteredTypes = Set(types) }
        resolved.durable = noSync ? false : (file.durable ?? true)
        resolved.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        resolved.apps = file.apps ?? []
        resolved.extraApps = apps.compactMap(Self.parseApp)
        guard (0...65_535).contains(resolved.port) else {
            throw ValidationError("the port must be between 0 and 65535")
        }
        guard (1...64).contains(resolved.workers) else { throw ValidationError("workers must be between 1 and 64") }
        return resolved
    }
}

/// `RelayOptions` after every source was consulted.
struct ResolvedRelayOptions: Sendable {
    var file: ServeConfigurationFile
    var host = "127.0.0.1"
    var port = 8080
    var data = "data"
    var keysDir = "keys"
    var workers = 2
    var batchSize = 256
    var presenceTTL = 60
    var messageRetention: Int64 = 7 * 24 * 60 * 60
    var chatPushDelay = 30
    var chatFilteredTypes: Set<String>?
    var durable = true
    var logLevel = Logger.Level.info
    var apps: [AppRecord] = []
    var extraApps: [(bundleID: String, teamID: String?)] = []

    var databasePath: String { (data as NSString).appendingPathComponent("herald.sqlite") }
    var masterKeyPath: String { (keysDir as NSString).appendingPathComponent("master.key") }
    var apiKeyPath: String { (keysDir as NSString).appendingPathComponent("api.key") }

    /// The master key from HERALD_MASTER_KEY or keys/master.key, made on first start.
    func masterKey() throws -> (MasterKey, String) {
        if ServeEnvironment.string(MasterKey.environmentVariable) != nil {
            return (
                try MasterKey.resolve(environment: ServeEnvironment.values, path: masterKeyPath), "HERALD_MASTER_KEY"
            )
        }
        if !FileManager.default.fileExists(atPath: masterKeyPath) {
            try KeyFiles.makeDirectory(keysDir)
            try MasterKey.generate().write(to: masterKeyPath)
        }
        do {
            return (try MasterKey.load(path: masterKeyPath), masterKeyPath)
        } catch {
            throw ValidationError("\(masterKeyPath): \(error)")
        }
    }

    /// The API key from HERALD_API_KEY or keys/api.key, made on first start.
    func apiKey() throws -> (String, String) {
        if let value = ServeEnvironment.string("HERALD_API_KEY") {
            guard value.count >= 16 else { throw ValidationError("HERALD_API_KEY must be at least 16 characters") }
            return (value, "HERALD_API_KEY")
        }
        if let text = try? String(contentsOfFile: apiKeyPath, encoding: .utf8) {
            let key = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard key.count >= 16 else { throw ValidationError("\(apiKeyPath) holds a key shorter than 16 characters") }
            return (key, apiKeyPath)
        }
        try KeyFiles.makeDirectory(keysDir)
        let key = "hk_" + ByteEncoding.hex(SecureBytes.random(count: 24).copyBytes())
        try SecretFile.write(Array((key + "\n").utf8), to: apiKeyPath, mode: 0o600)
        return (key, apiKeyPath)
    }

    func openStore(logger: Logger) throws -> SQLiteStore {
        var configuration = SQLiteStore.Configuration(path: databasePath)
        configuration.durable = durable
        do {
            return try SQLiteStore(configuration: configuration, logger: logger)
        } catch {
            throw ValidationError("\(error)")
        }
    }

    var relayConfiguration: RelayConfiguration {
        var configuration = RelayConfiguration()
        configuration.defaultPresenceTTL = presenceTTL
        configuration.messageRetention = messageRetention
        configuration.chat.firstPushDelay = .seconds(chatPushDelay)
        if let chatFilteredTypes { configuration.chat.filteredTypes = chatFilteredTypes }
        return configuration
    }

    var dispatcherConfiguration: DispatcherConfiguration {
        var configuration = DispatcherConfiguration()
        configuration.workers = workers
        configuration.batchSize = batchSize
        return configuration
    }

    /// The contact-center webhooks configured in the file or by HERALD_GENESYS_SECRET /
    /// HERALD_CXONE_SECRET.
    func adapters() throws -> [any ContactCenterAdapter] {
        var made: [any ContactCenterAdapter] = []
        for name in ["genesys", "cxone"] {
            let settings = file.adapters?[name]
            guard let secret = ServeEnvironment.string("HERALD_\(name.uppercased())_SECRET") ?? settings?.secret else {
                continue
            }
            guard secret.count >= 16 else {
                throw ValidationError("the \(name) adapter's secret must be at least 16 characters")
            }
            let authentication: WebhookAuthentication
            switch settings?.authentication ?? "hmac" {
            case "hmac": authentication = .hmacSHA256(secret)
            case "bearer": authentication = .sharedSecret(secret)
            case let other:
                throw ValidationError("adapters.\(name).authentication must be hmac or bearer (got '\(other)')")
            }
            let mapping = CustomerMapping(users: settings?.customers ?? [:], prefix: settings?.customerPrefix ?? "")
            made.append(
                name == "genesys"
                    ? GenesysAdapter(authentication: authentication, customers: mapping)
                    : CXoneAdapter(authentication: authentication, customers: mapping)
            )
        }
        return made
    }

    /// Saves the configured apps, filling a missing team id with `defaultTeam`.
    func registerApps(with relay: Relay, defaultTeam: String?) async throws -> [AppRecord] {
        var all = apps
        for extra in extraApps {
            guard let team = extra.teamID ?? defaultTeam else {
                throw ValidationError("--app \(extra.bundleID) needs a team id (BUNDLE_ID:TEAM_ID)")
            }
            all.append(AppRecord(id: extra.bundleID, teamID: team))
        }
        for app in all {
            do {
                try await relay.saveApp(app)
            } catch {
                throw ValidationError("app \(app.id): \(error.detail)")
            }
        }
        return all
    }
}
