import ArgumentParser
import Foundation
import HeraldServer
import Logging

/// Options shared by `herald serve` and `herald relay`. Each is taken from the command line, else
/// from its environment variable, else from `--config`, else from its default.
struct RelayOptions: ParsableArguments {
    @Option(help: "A YAML or JSON configuration file (see docs/relay.md). (HERALD_CONFIG)")
    var config: String?

    @Option(help: "The address the relay listens on. (HERALD_HOST; default 127.0.0.1)")
    var host: String?

    @Option(help: "The relay's HTTP port; 0 picks one. (HERALD_PORT; default 8080)")
    var port: Int?

    @Option(
        help:
            "The directory of the SQLite database, data/herald.sqlite, and in sandbox mode of the sandbox's devices, data/sandbox-devices.json. (HERALD_DATA; default data)"
    )
    var data: String?

    @Option(
        help:
            "A PostgreSQL database several relay nodes share, postgres://user[:password]@host[:port]/database; SQLite under --data when not given. (HERALD_DATABASE_URL)"
    )
    var database: String?

    @Option(
        name: .customLong("node-id"),
        help:
            "This node's name among several on one database: unique, and the same across restarts. (HERALD_NODE_ID; default host:port)"
    )
    var nodeID: String?

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

    @OptionGroup var logging: LoggingOptions

    @OptionGroup var http: HTTPOptions

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
        try logging.checkLevel()
        try logging.checkFormat()
        for app in apps where HeraldConfiguration.ExtraApp(app) == nil {
            throw ValidationError("--app must be BUNDLE_ID or BUNDLE_ID:TEAM_ID (got '\(app)')")
        }
    }

    /// What these flags set, as a configuration layer (nil where a flag was not given).
    var layer: ConfigurationFile {
        var layer = ConfigurationFile()
        layer.host = host
        layer.port = port
        layer.data = data
        layer.keysDir = keysDir
        layer.nodeID = nodeID
        layer.database = ConfigurationFile.Database(url: database)
        if workers != nil || batchSize != nil {
            layer.dispatcher = ConfigurationFile.Dispatcher()
            layer.dispatcher?.workers = workers
            layer.dispatcher?.batchSize = batchSize
        }
        layer.presenceTTL = presenceTTL
        if let chatPushDelay {
            layer.chat = ConfigurationFile.Chat()
            layer.chat?.firstPushDelay = chatPushDelay
        }
        layer.http = http.layer
        if noSync { layer.durable = false }
        // The flag's default is a value, not an absence: only a level other than info overrides.
        if logging.logLevel != "info" { layer.logLevel = logging.logLevel }
        layer.logFormat = logging.logFormat
        return layer
    }

    /// The configuration: these flags and `command`'s own, over the environment, over the file
    /// (`--config` or HERALD_CONFIG), over the defaults.
    func resolve(command: ConfigurationFile = ConfigurationFile()) throws -> HeraldConfiguration {
        try Self.resolve(
            flags: ConfigurationFile.merged([layer, command]),
            config: config,
            extraApps: apps.compactMap(HeraldConfiguration.ExtraApp.init)
        )
    }

    /// The configuration: `flags` over the environment, over the file (`config` or
    /// HERALD_CONFIG), over the defaults; the contact-center adapters' secrets checked.
    static func resolve(
        flags: ConfigurationFile,
        config: String?,
        extraApps: [HeraldConfiguration.ExtraApp] = []
    ) throws -> HeraldConfiguration {
        let environment = ProcessInfo.processInfo.environment
        do throws(HeraldServerError) {
            let configuration = try HeraldConfiguration(
                layers: layers(flags: flags, config: config, environment: environment),
                extraApps: extraApps
            )
            // The adapters' secrets may come from the environment, so they are checked here,
            // before anything starts: a bad one is one line, not a failure halfway through the
            // start with clients already open (which crashed the process in sandbox mode).
            _ = try configuration.contactCenterAdapters(environment: environment)
            return configuration
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// `flags`, over the environment, over the file (`config`, else HERALD_CONFIG): a
    /// configuration's layers, the first winning.
    static func layers(
        flags: ConfigurationFile,
        config: String?,
        environment: [String: String]
    ) throws(HeraldServerError) -> [ConfigurationFile] {
        var layers = [flags, try ConfigurationFile.environment(environment)]
        if let path = configFile(config, environment: environment) {
            layers.append(try ConfigurationFile.load(path: path))
        }
        return layers
    }

    /// The configuration file: `config` (`--config`), else HERALD_CONFIG; none when neither is
    /// set (an empty variable sets none).
    static func configFile(_ config: String?, environment: [String: String]) -> String? {
        config ?? environment["HERALD_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
    }
}
