public import Foundation
public import HeraldStore

/// Herald's configuration as one source gives it, every field optional: the YAML or JSON file
/// `--config` names, the environment (`environment(_:)`), or a command's flags. `merged(_:)`
/// layers them (flags over environment over file) and `HeraldConfiguration` resolves the result
/// once. Durations are whole seconds everywhere.
///
/// ```json
/// {
///   "host": "127.0.0.1", "port": 8080, "data": "data", "keys_dir": "keys",
///   "apps": [{"id": "com.example.chat", "team_id": "ABCDE12345", "content_policy": "full",
///             "alert_title": "New message", "alert_body": "Open to read", "message_ttl": 86400, "call_ttl": 30}],
///   "apns": {"key": "keys/AuthKey_X.p8", "key_id": "X", "team_id": "T", "environment": "production",
///            "url": null, "ca": null, "connections": 2},
///   "apns_keys": [{"name": "team-b", "key": "keys/AuthKey_Y.p8", "team_id": "U"}],
///   "fcm_accounts": [{"name": "project-b", "service_account": "keys/project-b.json"}],
///   "provider": {"url": "http://127.0.0.1:2199", "secret_file": "keys/provider.secret"},
///   "dispatcher": {"workers": 4, "batch_size": 256},
///   "http": {"header_read_timeout": 10, "idle_timeout": 60, "max_connections": 512},
///   "presence_ttl": 60, "message_retention": 604800, "durable": true, "undeliverable": "hold", "hold_for": 86400,
///   "database": {"url": "postgres://herald@db:5432/herald", "pool_size": 10, "statement_timeout": 5},
///   "node_id": "relay-a",
///   "webhooks": {"retry_window": 259200,
///                "apps": {"com.example.chat": {"url": "https://backend.example/herald", "secret_env": "CHAT_HOOK_SECRET"}}}
/// }
/// ```
public struct ConfigurationFile: Codable, Sendable, Equatable {
    public init() {}

    /// One APNs key: `apns` (the key the flags give, named `default`) or an entry of `apns_keys`.
    public struct APNs: Codable, Sendable, Equatable {
        public init() {}

        /// The name apps use for it (`apns_keys` entries; `apns` is `default`).
        public var name: String?
        /// The AuthKey_<KEYID>.p8 file.
        public var key: String?
        public var keyID: String?
        public var teamID: String?
        /// The environment of a device that names none: `development` (the default) or `production`.
        public var environment: String?
        /// APNs' URL for `environment` (Apple's unless given).
        public var url: String?
        /// APNs' URL for development tokens (Apple's `api.sandbox.push.apple.com` unless given).
        public var developmentURL: String?
        /// APNs' URL for production tokens (Apple's `api.push.apple.com` unless given).
        public var productionURL: String?
        public var ca: String?
        public var connections: Int?
        /// Seconds one APNs attempt may take (10).
        public var requestTimeout: Int?

        enum CodingKeys: String, CodingKey {
            case name, key
            case keyID = "key_id"
            case teamID = "team_id"
            case environment, url
            case developmentURL = "development_url"
            case productionURL = "production_url"
            case ca, connections
            case requestTimeout = "request_timeout"
        }
    }

    public struct Provider: Codable, Sendable, Equatable {
        public init() {}

        public var url: String?
        /// Several providers (`herald relay` spreads its batches over those that answer); with
        /// `url`, that one comes first.
        public var urls: [String]?
        public var secretFile: String?

        enum CodingKeys: String, CodingKey {
            case url, urls
            case secretFile = "secret_file"
        }
    }

    public struct Dispatcher: Codable, Sendable, Equatable {
        public init() {}

        public var workers: Int?
        public var batchSize: Int?

        enum CodingKeys: String, CodingKey {
            case workers
            case batchSize = "batch_size"
        }
    }

    /// One contact-center webhook.
    public struct Adapter: Codable, Sendable, Equatable {
        public init() {}

        /// The shared secret (or HMAC key); HERALD_<NAME>_SECRET wins over it.
        public var secret: String?
        /// `hmac` (x-herald-signature: sha256=…, the default) or `bearer`.
        public var authentication: String?
        /// The platform's customer id → Herald user id; others map to `customer_prefix` + id.
        public var customers: [String: String]?
        public var customerPrefix: String?

        enum CodingKeys: String, CodingKey {
            case secret, authentication, customers
            case customerPrefix = "customer_prefix"
        }
    }

    /// The FCM sender (Android pushes): `fcm` (named `default`) or an entry of `fcm_accounts`.
    public struct FCM: Codable, Sendable, Equatable {
        public init() {}

        /// The name apps use for it (`fcm_accounts` entries; `fcm` is `default`).
        public var name: String?
        /// A Google service-account JSON file.
        public var serviceAccount: String?
        public var url: String?
        public var ca: String?

        enum CodingKeys: String, CodingKey {
            case name
            case serviceAccount = "service_account"
            case url, ca
        }
    }

    /// The in-process sandbox of `herald serve` without an Apple key.
    public struct Sandbox: Codable, Sendable, Equatable {
        public init() {}

        /// APNs' port (2197), APNs' development environment; 0 picks one.
        public var apnsPort: Int?
        /// APNs' production environment's port (2195); 0 picks one.
        public var apnsProductionPort: Int?
        /// FCM's port, messages:send and /token (2196); 0 picks one.
        public var fcmPort: Int?
        /// The control API's port (2198); 0 picks one.
        public var controlPort: Int?
        /// The Web Push service's port (2194 beside the default APNs port, else one picked); 0
        /// picks one.
        public var webPushPort: Int?

        enum CodingKeys: String, CodingKey {
            case apnsPort = "apns_port"
            case apnsProductionPort = "apns_production_port"
            case webPushPort = "webpush_port"
            case fcmPort = "fcm_port"
            case controlPort = "control_port"
        }
    }

    /// The shared database; without it, SQLite under `data`.
    public struct Database: Codable, Sendable, Equatable {
        public init() {}

        /// A section that sets only the URL; nil without one (a flag or variable not given).
        public init?(url: String?) {
            guard let url else { return nil }
            self.url = url
        }

        /// `postgres://user[:password]@host[:port]/database[?sslmode=…&schema=…]`.
        public var url: String?
        /// Connections for statements each node keeps at most (10); up to three more listen for wake-ups.
        public var poolSize: Int?
        /// Seconds a statement may run before the server cancels it (5).
        public var statementTimeout: Int?

        enum CodingKeys: String, CodingKey {
            case url
            case poolSize = "pool_size"
            case statementTimeout = "statement_timeout"
        }
    }

    /// The HTTP listener's limits (the relay's, or `herald provider`'s).
    public struct HTTP: Codable, Sendable, Equatable {
        public init() {}

        /// Seconds a request head may take to arrive complete (10).
        public var headerReadTimeout: Int?
        /// Seconds a connection may sit without a request before it is closed (60).
        public var idleTimeout: Int?
        /// Connections open at once; one more gets 503 and is closed (512).
        public var maxConnections: Int?

        enum CodingKeys: String, CodingKey {
            case headerReadTimeout = "header_read_timeout"
            case idleTimeout = "idle_timeout"
            case maxConnections = "max_connections"
        }
    }

    /// The apps' webhooks (docs/webhooks.md).
    public struct Webhooks: Codable, Sendable, Equatable {
        public init() {}

        /// Seconds an event is retried after its creation before it is failed (259200: 72 h).
        public var retryWindow: Int?
        /// Per app id: where its events go and the secret they are signed with.
        public var apps: [String: App]?

        /// One app's webhook. The secret comes from the environment variable `secret_env` names
        /// (so the file holds no secret), or from `secret`.
        public struct App: Codable, Sendable, Equatable {
            public init() {}

            public var url: String?
            public var secret: String?
            public var secretEnv: String?

            enum CodingKeys: String, CodingKey {
                case url, secret
                case secretEnv = "secret_env"
            }
        }

        enum CodingKeys: String, CodingKey {
            case retryWindow = "retry_window"
            case apps
        }
    }

    /// Chat background semantics.
    public struct Chat: Codable, Sendable, Equatable {
        public init() {}

        /// Seconds before the first push after a chat disconnect; 0 pushes at once.
        public var firstPushDelay: Int?
        /// Transcript event types that never push.
        public var filteredTypes: [String]?
        /// Seconds without an event after which a chat ends (86400).
        public var idleEnd: Int?

        enum CodingKeys: String, CodingKey {
            case firstPushDelay = "first_push_delay"
            case filteredTypes = "filtered_types"
            case idleEnd = "idle_end"
        }
    }

    public var host: String?
    public var port: Int?
    public var data: String?
    public var keysDir: String?
    public var apps: [AppRecord]?
    public var apns: APNs?
    public var fcm: FCM?
    /// Several APNs keys (a fleet's apps of several teams), each named; with `apns`, which is `default`.
    public var apnsKeys: [APNs]?
    /// Several FCM service accounts (several Firebase projects), each named; with `fcm`, which is `default`.
    public var fcmAccounts: [FCM]?
    /// The VAPID keys that sign Web Push requests, each named: the key named after an app is that
    /// app's, `default` every other app's (docs/webpush.md).
    public var vapidKeys: [VAPID]?
    /// The Huawei apps Push Kit messages are sent as, each named (docs/provider.md).
    public var hmsApps: [HMS]?
    public var provider: Provider?
    public var dispatcher: Dispatcher?
    public var presenceTTL: Int?
    public var messageRetention: Int64?
    /// A message for a user without an activated device: `refuse` or `hold` (the default), for
    /// the apps that name no policy of their own.
    public var undeliverable: Undeliverable?
    /// Seconds a held message waits for the user's first device (86400; at most 604800).
    public var holdFor: Int64?
    /// Seconds after a VoIP push's `delivered` receipt within which the app must report it to
    /// CallKit (30; 1 to 600): docs/receipts.md, "The PushKit guard".
    public var callKitReportWindow: Int64?
    public var durable: Bool?
    public var database: Database?
    /// This relay node's name among several on one database (claims are leased in its name).
    public var nodeID: String?
    public var adapters: [String: Adapter]?
    public var chat: Chat?
    /// Messages a second per app (`HeraldConfiguration+Quotas.swift`).
    public var quotas: Quotas?
    public var webhooks: Webhooks?
    public var sandbox: Sandbox?
    public var http: HTTP?
    /// trace, debug, info, notice, warning, error or critical.
    public var logLevel: String?
    /// text (the default) or json: one JSON object a line.
    public var logFormat: String?
    /// One trace per push, exported over OTLP/HTTP (off unless `endpoint` is set; docs/tracing.md).
    public var tracing: Tracing?
    /// The operator console (docs/console.md).
    public var console: Console?

    enum CodingKeys: String, CodingKey {
        case host, port, data
        case keysDir = "keys_dir"
        case apps, apns, fcm
        case apnsKeys = "apns_keys"
        case fcmAccounts = "fcm_accounts"
        case vapidKeys = "vapid_keys"
        case hmsApps = "hms_apps"
        case provider, dispatcher
        case presenceTTL = "presence_ttl"
        case messageRetention = "message_retention"
        case undeliverable
        case holdFor = "hold_for"
        case callKitReportWindow = "callkit_report_window"
        case durable, database
        case nodeID = "node_id"
        case adapters, chat, quotas, webhooks, sandbox, http
        case logLevel = "log_level"
        case logFormat = "log_format"
        case tracing, console
    }
}

extension ConfigurationFile {
    /// Reads a configuration file, YAML or JSON (`Format(path:contents:)`); a key the
    /// configuration does not have is an error that names its path (a misspelt key would
    /// otherwise be ignored without a word), and so is a value of the wrong type. In YAML, the
    /// error names the line too.
    public static func load(path: String) throws(HeraldServerError) -> ConfigurationFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .configuration("cannot read the configuration file \(path)")
        }
        return try parse(data, format: Format(path: path, contents: data), path: path)
    }

    /// The formats a configuration file may be written in.
    public enum Format: String, Sendable, Hashable {
        case yaml = "YAML"
        case json = "JSON"

        /// `.yaml` and `.yml` are YAML and `.json` JSON; any other name is JSON when its first
        /// character (after blanks) opens an object, YAML otherwise.
        public init(path: String, contents: Data) {
            switch (path as NSString).pathExtension.lowercased() {
            case "yaml", "yml": self = .yaml
            case "json": self = .json
            default:
                let first = contents.first { !Set(" \t\r\n".utf8).contains($0) }
                self = first == UInt8(ascii: "{") ? .json : .yaml
            }
        }
    }

    /// Parses a configuration in `format`; `path` names the file in errors.
    public static func parse(_ data: Data, format: Format, path: String) throws(HeraldServerError) -> ConfigurationFile
    {
        let json: Data
        // Where each key's value is, in YAML: errors name the line.
        var lines: [String: Int] = [:]
        switch format {
        case .json:
            json = data
        case .yaml:
            (json, lines) = try YAMLConfiguration.json(from: data, path: path)
        }
        func at(_ field: String) -> String { lines[field].map { " (line \($0))" } ?? "" }
        let file: ConfigurationFile
        do {
            file = try JSONDecoder().decode(ConfigurationFile.self, from: json)
        } catch let DecodingError.keyNotFound(key, context) {
            let field = Self.path(context.codingPath + [key])
            throw .configuration("\(path): '\(field)' is missing\(at(Self.path(context.codingPath)))")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let field = Self.path(context.codingPath)
            throw .configuration("\(path): '\(field)' has the wrong type\(at(field))")
        } catch let DecodingError.dataCorrupted(context) {
            let field = Self.path(context.codingPath)
            throw .configuration(
                field.isEmpty
                    ? "\(path) is not valid \(format.rawValue)" : "\(path): '\(field)' is not valid\(at(field))"
            )
        } catch {
            throw .configuration("\(path): \(error)")
        }
        // What was read but not kept is a key the configuration does not know.
        if let given = try? JSONSerialization.jsonObject(with: json), let kept = file.jsonObject(),
            let unknown = Self.firstUnknownKey(in: given, keptIn: kept, at: "")
        {
            throw .configuration("\(path): unknown key '\(unknown)'\(at(unknown))")
        }
        return file
    }

    /// The settings the environment gives (`HERALD_HOST`, `HERALD_APNS_KEY`, …); secrets are not
    /// part of it (the master key, the API key and webhook secrets are read where they are used).
    public static func environment(_ values: [String: String]) throws(HeraldServerError) -> ConfigurationFile {
        func string(_ name: String) -> String? {
            guard let value = values[name], !value.isEmpty else { return nil }
            return value
        }
        func int(_ name: String) throws(HeraldServerError) -> Int? {
            guard let text = string(name) else { return nil }
            guard let value = Int(text) else { throw .configuration("\(name) must be a whole number (got '\(text)')") }
            return value
        }
        func ratio(_ name: String) throws(HeraldServerError) -> Double? {
            guard let text = string(name) else { return nil }
            guard let value = Double(text) else { throw .configuration("\(name) must be a number (got '\(text)')") }
            return value
        }
        var layer = ConfigurationFile()
        var tracing = Tracing()
        tracing.endpoint = string("HERALD_TRACING_ENDPOINT")
        tracing.serviceName = string("HERALD_TRACING_SERVICE_NAME")
        tracing.samplingRatio = try ratio("HERALD_TRACING_SAMPLING_RATIO")
        if tracing != Tracing() { layer.tracing = tracing }
        layer.host = string("HERALD_HOST")
        layer.port = try int("HERALD_PORT")
        layer.data = string("HERALD_DATA")
        layer.keysDir = string("HERALD_KEYS_DIR")
        layer.logLevel = string("HERALD_LOG_LEVEL")
        layer.logFormat = string("HERALD_LOG_FORMAT")
        layer.nodeID = string("HERALD_NODE_ID")
        layer.database = Database(url: string("HERALD_DATABASE_URL"))
        if let workers = try int("HERALD_WORKERS") {
            layer.dispatcher = Dispatcher()
            layer.dispatcher?.workers = workers
        }
        var http = HTTP()
        http.headerReadTimeout = try int("HERALD_HTTP_HEADER_READ_TIMEOUT")
        http.idleTimeout = try int("HERALD_HTTP_IDLE_TIMEOUT")
        http.maxConnections = try int("HERALD_HTTP_MAX_CONNECTIONS")
        if http != HTTP() { layer.http = http }
        var apns = APNs()
        apns.key = string("HERALD_APNS_KEY")
        apns.keyID = string("HERALD_APNS_KEY_ID")
        apns.teamID = string("HERALD_APNS_TEAM_ID")
        apns.environment = string("HERALD_APNS_ENVIRONMENT")
        apns.url = string("HERALD_APNS_URL")
        apns.ca = string("HERALD_APNS_CA")
        if apns != APNs() { layer.apns = apns }
        var fcm = FCM()
        fcm.serviceAccount = string("HERALD_FCM_SERVICE_ACCOUNT")
        fcm.url = string("HERALD_FCM_URL")
        fcm.ca = string("HERALD_FCM_CA")
        if fcm != FCM() { layer.fcm = fcm }
        if let text = string("HERALD_PROVIDER_URL") {
            // Several providers, comma-separated.
            let urls = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            layer.provider = Provider()
            if urls.count > 1 { layer.provider?.urls = urls } else { layer.provider?.url = urls.first }
        }
        return layer
    }

    /// The layers as one: each setting from the first layer that has it (nested sections key by
    /// key, lists whole).
    public static func merged(_ layers: [ConfigurationFile]) -> ConfigurationFile {
        var merged: [String: Any] = [:]
        for layer in layers.reversed() {
            guard let object = layer.jsonObject() as? [String: Any] else { continue }
            merged = Self.overlay(object, on: merged)
        }
        guard let data = try? JSONSerialization.data(withJSONObject: merged),
            let file = try? JSONDecoder().decode(ConfigurationFile.self, from: data)
        else { return layers.first ?? ConfigurationFile() }
        return file
    }

    private func jsonObject() -> Any? {
        guard let data = try? JSONEncoder().encode(self) else { return nil }
        return try? JSONSerialization.jsonObject(with: data)
    }

    private static func overlay(_ top: [String: Any], on bottom: [String: Any]) -> [String: Any] {
        var result = bottom
        for (key, value) in top {
            if let section = value as? [String: Any], let under = bottom[key] as? [String: Any] {
                result[key] = overlay(section, on: under)
            } else {
                result[key] = value
            }
        }
        return result
    }

    private static func firstUnknownKey(in given: Any, keptIn kept: Any, at path: String) -> String? {
        if let given = given as? [String: Any] {
            let kept = kept as? [String: Any] ?? [:]
            for key in given.keys.sorted() where !(given[key] is NSNull) {
                let keyPath = path.isEmpty ? key : path + "." + key
                guard let inner = kept[key] else { return keyPath }
                if let unknown = firstUnknownKey(in: given[key]!, keptIn: inner, at: keyPath) { return unknown }
            }
        } else if let given = given as? [Any], let kept = kept as? [Any] {
            for (index, element) in given.enumerated() where index < kept.count {
                if let unknown = firstUnknownKey(in: element, keptIn: kept[index], at: "\(path)[\(index)]") {
                    return unknown
                }
            }
        }
        return nil
    }

    static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            .replacingOccurrences(of: ".[", with: "[")
    }
}
