import Foundation
public import HeraldAdapters
public import HeraldDispatch
public import HeraldHTTPSupport
import HeraldMacros
public import HeraldPush
public import HeraldRelay
public import HeraldStore
public import HeraldStorePostgres
public import Logging

/// Herald's configuration, resolved once from its sources (flags over environment over file over
/// defaults) and checked: every part of a running Herald is built from this value.
public struct HeraldConfiguration: Sendable {
    /// The address the relay listens on (127.0.0.1).
    public var host = "127.0.0.1"
    /// One trace per push over OTLP/HTTP; nil (the default): tracing off (docs/tracing.md).
    public var tracing: TracingConfiguration?
    /// The relay's HTTP port (8080); 0 picks one.
    public var port = 8080
    /// Where the database and the provider token live (`data`).
    public var dataDirectory = "data"
    /// Where keys live: master.key, api.key, AuthKey_*, the FCM service account, the sandbox CA.
    public var keysDirectory = "keys"
    /// Every commit synced to disk (true), or only written (survives a process crash, not a power cut).
    /// SQLite only: PostgreSQL's durability is the server's (`synchronous_commit`).
    public var durable = true
    /// Where the relay's state lives: SQLite under `dataDirectory` (the default), or PostgreSQL,
    /// shared by several relay nodes.
    public var database: Database = .sqlite
    /// This node's name among several on one database (`host:port` when not given): claims are
    /// leased in its name, and a restarted node takes back what it held, so it must be unique and
    /// stay the same across restarts.
    public var nodeID: String?
    public var logLevel = Logger.Level.info
    /// How logs are written: text (the default) or one JSON object a line.
    public var logFormat = LogFormat.text
    /// Apps to register at start, with the file's and the flags' together.
    public var apps: [AppRecord] = []
    /// The apps' webhooks from the file, by app id (their secrets resolved where the relay is
    /// built, from the environment when `secret_env` is given).
    public var webhooks: [String: ConfigurationFile.Webhooks.App] = [:]
    /// How long a webhook event is retried after its creation (72 hours).
    public var webhookRetryWindow: Duration = .seconds(72 * 60 * 60)
    /// Apps named on the command line as `BUNDLE_ID[:TEAM_ID]`; a missing team is the APNs key's.
    public var extraApps: [ExtraApp] = []
    /// Dispatcher loops draining the outbox (2), and how many pushes each claims at a time (256).
    public var workers = 2
    public var batchSize = 256
    /// How long a heartbeat counts as current when it names no ttl (60 s).
    public var presenceTTL: Duration = .seconds(60)
    /// How long messages are kept for fetching by id, and finished pushes for their history (7 days).
    public var messageRetention: Duration = .seconds(7 * 24 * 60 * 60)
    /// How long a chat's first push waits after the app went to the background (30 s; 0: at once).
    public var chatPushDelay: Duration = .seconds(30)
    /// How long a chat may go without an event before it ends (24 hours).
    public var chatIdleEnd: Duration = .seconds(24 * 60 * 60)
    /// Transcript event types that never push; nil keeps the relay's default.
    public var chatFilteredTypes: Set<String>?
    /// A message for a user without a device: refused or held, and for how long (apps' default).
    public var undeliverable = UndeliverableConfiguration()
    /// The apps' message quotas.
    public var quotas = QuotaConfiguration()
    /// The relay's own push deadlines (the CallKit report window).
    public var deadlines = DeadlineConfiguration()
    /// Every APNs key (key id, team, .p8), each with its name: the one `apns` (the flags) gives is
    /// `default` and comes first, then `apns_keys`. Without any, `herald serve` runs the sandbox
    /// in process.
    public var apnsKeys: [APNs] = []
    /// Every FCM service account, each with its name: `fcm`'s is `default`, then `fcm_accounts`.
    public var fcmAccounts: [FCM] = []
    /// The VAPID keys (`vapid_keys`), each with its name and subject. Without any, browsers are not
    /// served, but in sandbox mode, which signs with a development key (keys/vapid.pem).
    public var vapidKeys: [VAPID] = []
    /// The Huawei apps (`hms_apps`), each with its name, app id and secret file. Without any,
    /// Huawei devices are not served, but in sandbox mode, which sends as a development app.
    public var hmsApps: [HMS] = []
    /// The key of an app that names none: the one named `default`, or the only one.
    public var apns: APNs? {
        apnsKeys.first { $0.name == Self.defaultName } ?? (apnsKeys.count == 1 ? apnsKeys[0] : nil)
    }
    /// The account of an app that names none: the one named `default`, or the only one.
    public var fcm: FCM? {
        fcmAccounts.first { $0.name == Self.defaultName } ?? (fcmAccounts.count == 1 ? fcmAccounts[0] : nil)
    }
    /// The name of the key and account the single flags (`--apns-key`, `--fcm-service-account`) give.
    public static let defaultName = "default"
    /// A remote `herald provider`, for `herald relay`.
    public var provider: RemoteProvider?
    /// The in-process sandbox's ports (APNs 2197, FCM 2196, control 2198; 0 picks one).
    public var sandboxPorts = SandboxPorts()
    /// The HTTP listener: header-read timeout (10 s), idle timeout (60 s), connection cap (512).
    public var http = HTTPConnectionLimits()
    /// The operator console (docs/console.md).
    public var console = ConsoleSettings()
    /// The contact-center webhooks, as the file gives them (secrets may come from the environment).
    public var adapters: [String: ConfigurationFile.Adapter] = [:]

    /// The storage engine.
    public enum Database: Sendable, Hashable {
        /// The embedded default: one file, one process.
        case sqlite
        /// A PostgreSQL database several relay nodes share.
        case postgres(PostgresStoreConfiguration)
    }

    /// An app named on the command line.
    @MemberwiseInit
    public struct ExtraApp: Sendable, Hashable {
        public var bundleID: String
        public var teamID: String?

        /// `BUNDLE_ID` or `BUNDLE_ID:TEAM_ID`; nil for anything else.
        public init?(_ text: String) {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), !parts[0].isEmpty else { return nil }
            if parts.count == 2, parts[1].isEmpty { return nil }
            self.init(bundleID: String(parts[0]), teamID: parts.count == 2 ? String(parts[1]) : nil)
        }
    }

    /// One Apple provider key and where APNs is for each environment it serves.
    public struct APNs: Sendable, Hashable {
        /// The name apps give for it (`default` for the flags' key).
        public var name: String = HeraldConfiguration.defaultName
        /// The AuthKey_<KEYID>.p8 file.
        public var key: String
        /// The key id; read from the file name when nil.
        public var keyID: String?
        public var teamID: String
        /// `development` or `production`: a device's environment when neither it nor its app names one.
        public var environment: String
        /// APNs' URL for `environment`: Apple's unless another is given.
        public var url: String
        /// APNs' URL for each environment the key serves: both of Apple's hosts by default; only
        /// `environment`'s when `url` names another server, unless the other's URL is given too.
        public var urls: [APNsEnvironment: String] = [:]
        /// A CA certificate (PEM) to trust, for an APNs other than Apple's.
        public var ca: String?
        /// HTTP/2 connections to APNs (2).
        public var connections: Int
        /// How long one attempt may take (10 s).
        public var requestTimeout: Duration
    }

    /// Google's service account and where FCM is.
    public struct FCM: Sendable, Hashable {
        /// The name apps give for it (`default` for the flags' account).
        public var name: String = HeraldConfiguration.defaultName
        public var serviceAccount: String
        public var url: String
        public var ca: String?
    }

    /// A Huawei app: its name (a package, or `default`), app id, secret file, and where to send.
    public struct HMS: Sendable, Hashable {
        public var name: String
        public var appID: String
        public var clientSecretFile: String
        public var url = "https://push-api.cloud.huawei.com"
        public var tokenURL = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
        public var ca: String?
    }

    /// A VAPID key: its name (an app's id, or `default`), its PEM file and its `sub` claim.
    public struct VAPID: Sendable, Hashable {
        public var name: String
        public var key: String
        public var subject: String
    }

    /// One or several remote `herald provider`s.
    public struct RemoteProvider: Sendable, Hashable {
        /// Their base URLs (at least one); batches go to each in turn, skipping one that gives no
        /// answer.
        public var urls: [String]
        /// The first provider.
        public var url: String { urls[0] }
        /// The file with its bearer secret; HERALD_PROVIDER_SECRET holds the secret itself.
        public var secretFile: String?
    }

    /// The in-process sandbox's ports.
    public struct SandboxPorts: Sendable, Hashable {
        public var apns = 2197
        /// APNs' production environment: 2195 beside the default APNs port, else one picked.
        public var apnsProduction: Int?
        public var fcm = 2196
        public var control = 2198
        /// The Web Push service: 2194 beside the default APNs port, else one picked.
        public var webPush: Int?

        public init() {}
    }

    public init() {}

    /// Resolves the layers (the first that has a setting gives it) and checks every value.
    public init(
        layers: [ConfigurationFile],
        extraApps: [ExtraApp] = []
    ) throws(HeraldServerError) {
        let file = ConfigurationFile.merged(layers)
        host = file.host ?? host
        port = file.port ?? port
        dataDirectory = file.data ?? dataDirectory
        keysDirectory = file.keysDir ?? keysDirectory
        durable = file.durable ?? durable
        nodeID = file.nodeID
        if let database = try Self.database(file.database) { self.database = database }
        if let level = file.logLevel { logLevel = try Self.logLevel(level) }
        if let format = file.logFormat { logFormat = try Self.logFormat(format) }
        apps = file.apps ?? []
        webhooks = file.webhooks?.apps ?? [:]
        if let seconds = file.webhooks?.retryWindow {
            guard seconds > 0 else { throw .configuration("webhooks.retry_window must be at least 1 second") }
            webhookRetryWindow = .seconds(seconds)
        }
        self.extraApps = extraApps
        workers = file.dispatcher?.workers ?? workers
        batchSize = file.dispatcher?.batchSize ?? batchSize
        if let seconds = file.presenceTTL { presenceTTL = .seconds(seconds) }
        if let seconds = file.messageRetention { messageRetention = .seconds(seconds) }
        if let seconds = file.chat?.firstPushDelay { chatPushDelay = .seconds(seconds) }
        chatFilteredTypes = file.chat?.filteredTypes.map(Set.init)
        if let seconds = file.chat?.idleEnd { chatIdleEnd = .seconds(seconds) }
        undeliverable = try Self.undeliverable(file)
        console = try Self.console(file)
        deadlines = try Self.deadlines(file)
        quotas = try Self.quotas(file)
        adapters = file.adapters ?? [:]
        if let seconds = file.http?.headerReadTimeout { http.headerReadTimeout = .seconds(seconds) }
        if let seconds = file.http?.idleTimeout { http.idleTimeout = .seconds(seconds) }
        if let connections = file.http?.maxConnections { http.maxConnections = connections }
        if let sandbox = file.sandbox {
            sandboxPorts.apns = sandbox.apnsPort ?? sandboxPorts.apns
            sandboxPorts.apnsProduction = sandbox.apnsProductionPort
            sandboxPorts.fcm = sandbox.fcmPort ?? sandboxPorts.fcm
            sandboxPorts.control = sandbox.controlPort ?? sandboxPorts.control
            sandboxPorts.webPush = sandbox.webPushPort
        }
        try Self.refuseNetworksWithoutCredentials(file)
        try resolveCredentials(file)
        for app in apps {
            try checkNames(of: app)
        }
        provider = try Self.remoteProvider(file.provider)
        tracing = try TracingConfiguration(file.tracing)
        try check()
    }

    /// Refuses an app that names a key or account not configured (when any is configured: a relay
    /// whose provider holds the keys knows none of them).
    public func checkNames(of app: AppRecord) throws(HeraldServerError) {
        if let name = app.apnsKey, !apnsKeys.isEmpty, !apnsKeys.contains(where: { $0.name == name }) {
            throw .configuration(
                "app \(app.id): no APNs key named '\(name)' (configured: \(apnsKeys.map(\.name).joined(separator: ", ")))"
            )
        }
        if let name = app.fcmAccount, !fcmAccounts.isEmpty, !fcmAccounts.contains(where: { $0.name == name }) {
            throw .configuration(
                "app \(app.id): no FCM account named '\(name)' (configured: \(fcmAccounts.map(\.name).joined(separator: ", ")))"
            )
        }
    }

    /// Apple's and Google's endpoints.
    public static let appleDevelopment = "https://api.sandbox.push.apple.com"
    public static let appleProduction = "https://api.push.apple.com"
    public static let googleFCM = "https://fcm.googleapis.com"

    private func check() throws(HeraldServerError) {
        guard (0...65_535).contains(port) else { throw .configuration("the port must be between 0 and 65535") }
        let ports = [sandboxPorts.apns, sandboxPorts.apnsProduction ?? 0, sandboxPorts.fcm, sandboxPorts.control]
        for sandboxPort in ports where !(0...65_535).contains(sandboxPort) {
            throw .configuration("sandbox ports must be between 0 and 65535")
        }
        guard (1...64).contains(workers) else { throw .configuration("workers must be between 1 and 64") }
        guard (1...1000).contains(batchSize) else { throw .configuration("the batch size must be between 1 and 1000") }
        guard (Duration.seconds(1)...Duration.seconds(3600)).contains(presenceTTL) else {
            throw .configuration("the presence ttl must be between 1 and 3600 seconds")
        }
        guard (Duration.zero...Duration.seconds(3600)).contains(chatPushDelay) else {
            throw .configuration("chat.first_push_delay must be between 0 and 3600 seconds")
        }
        guard (Duration.seconds(60)...Duration.seconds(30 * 24 * 60 * 60)).contains(chatIdleEnd) else {
            throw .configuration("chat.idle_end must be between 60 seconds and 30 days")
        }
        guard messageRetention >= .seconds(60) else {
            throw .configuration("message_retention must be at least 60 seconds")
        }
        guard (1...3600).contains(http.headerReadTimeout.components.seconds) else {
            throw .configuration("http.header_read_timeout must be between 1 and 3600 seconds")
        }
        guard (1...86_400).contains(http.idleTimeout.components.seconds) else {
            throw .configuration("http.idle_timeout must be between 1 and 86400 seconds")
        }
        guard (1...1_000_000).contains(http.maxConnections) else {
            throw .configuration("http.max_connections must be between 1 and 1000000")
        }
        for apns in apnsKeys where !(1...64).contains(apns.connections) {
            throw .configuration("--apns-connections must be between 1 and 64")
        }
        for apns in apnsKeys where !(Duration.seconds(1)...Duration.seconds(300)).contains(apns.requestTimeout) {
            throw .configuration("--apns-request-timeout must be between 1 and 300 seconds")
        }
    }

    /// This node's name: the configured one, or `host:port`.
    public var resolvedNodeID: String {
        if let nodeID, !nodeID.isEmpty { return nodeID }
        return "\(ProcessInfo.processInfo.hostName):\(port)"
    }

    /// Where the relay's state lives, for banners (no password).
    public var databaseDescription: String {
        switch database {
        case .sqlite: databasePath + (durable ? "" : "  (no fsync)")
        case .postgres(let postgres): "\(postgres)  (PostgreSQL, node \(resolvedNodeID))"
        }
    }

    /// The database file.
    public var databasePath: String { (dataDirectory as NSString).appendingPathComponent("herald.sqlite") }
    /// Where the provider token is kept between runs.
    public var providerTokenPath: String { (dataDirectory as NSString).appendingPathComponent("provider-token") }

    /// Where the in-process sandbox keeps its apps, devices and tokens, so devices activated
    /// before a restart still receive pushes after it. Nodes on one PostgreSQL database may share
    /// a data directory while each runs its own sandbox: there the file is the node's.
    public var sandboxRegistryPath: String {
        let name =
            switch database {
            case .sqlite: "sandbox-devices.json"
            case .postgres: "sandbox-devices-\(resolvedNodeID).json"
            }
        return (dataDirectory as NSString).appendingPathComponent(name)
    }

    /// The relay's own settings.
    public var relayConfiguration: RelayConfiguration {
        var configuration = RelayConfiguration()
        configuration.defaultPresenceTTL = presenceTTL
        configuration.messageRetention = messageRetention
        configuration.chat.firstPushDelay = chatPushDelay
        configuration.chat.idleEnd = chatIdleEnd
        if let chatFilteredTypes { configuration.chat.filteredTypes = chatFilteredTypes }
        configuration.undeliverable = undeliverable
        configuration.deadlines = deadlines
        configuration.quotas = quotas
        // On a shared database the live channels are published under the node's id, so a message
        // ingested on any node reaches the node holding the device's channel.
        if case .postgres = database { configuration.live.nodeID = resolvedNodeID }
        return configuration
    }

    /// The dispatcher's settings.
    public var dispatcherConfiguration: DispatcherConfiguration {
        var configuration = DispatcherConfiguration()
        configuration.workers = workers
        configuration.batchSize = batchSize
        configuration.owner = resolvedNodeID
        return configuration
    }

    /// The contact-center webhooks configured in the file or by HERALD_GENESYS_SECRET /
    /// HERALD_CXONE_SECRET.
    public func contactCenterAdapters(
        environment: [String: String]
    ) throws(HeraldServerError)
        -> [any ContactCenterAdapter]
    {
        var made: [any ContactCenterAdapter] = []
        for name in ["genesys", "cxone"] {
            let settings = adapters[name]
            let fromEnvironment = environment["HERALD_\(name.uppercased())_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
            guard let secret = fromEnvironment ?? settings?.secret else { continue }
            guard secret.count >= 16 else {
                throw .configuration("the \(name) adapter's secret must be at least 16 characters")
            }
            let authentication: WebhookAuthentication
            switch settings?.authentication ?? "hmac" {
            case "hmac": authentication = .hmacSHA256(secret)
            case "bearer": authentication = .sharedSecret(secret)
            case let other:
                throw .configuration("adapters.\(name).authentication must be hmac or bearer (got '\(other)')")
            }
            let mapping = CustomerMapping(users: settings?.customers ?? [:], prefix: settings?.customerPrefix ?? "")
            made.append(
                name == "genesys"
                    ? GenesysAdapter(authentication: authentication, customers: mapping)
                    : CXoneAdapter(authentication: authentication, customers: mapping)
            )
        }
        for name in adapters.keys where !["genesys", "cxone"].contains(name) {
            throw .configuration("adapters.\(name): no such adapter (genesys, cxone)")
        }
        return made
    }
}

extension HeraldConfiguration {
    /// The configured webhooks with their secrets, by app id: `secret_env` names the environment
    /// variable holding the secret, or `secret` gives it.
    public func webhookSettings(environment: [String: String]) throws(HeraldServerError) -> [String: WebhookSettings] {
        var settings: [String: WebhookSettings] = [:]
        for (app, webhook) in webhooks {
            guard let url = webhook.url else { throw .configuration("webhooks.apps.\(app).url is missing") }
            let secret: String
            if let name = webhook.secretEnv {
                guard let value = environment[name], !value.isEmpty else {
                    throw .configuration("webhooks.apps.\(app).secret_env names \(name), which is not set")
                }
                secret = value
            } else if let value = webhook.secret {
                secret = value
            } else {
                throw .configuration("webhooks.apps.\(app) needs secret_env (or secret)")
            }
            settings[app] = WebhookSettings(url: url, secret: secret)
        }
        return settings
    }
}
