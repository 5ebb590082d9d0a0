public import AsyncHTTPClient
import Foundation
import HeraldAPNs
import HeraldCrypto
import HeraldFCM
import HeraldFCMCore
import HeraldProvider
import HeraldPush
import HeraldRelay
import HeraldRelayHTTP
import HeraldRelayProvider
import HeraldSandbox
public import HeraldStore
import HeraldStorePostgres
import HeraldStoreSQLite
import Hummingbird
import HummingbirdWebSocket
public import Logging
import Metrics
import NIOCore
import NIOPosix
public import Prometheus
import ServiceLifecycle
import Synchronization

/// A running Herald built from one resolved configuration: `herald serve` (the relay with the
/// provider stage in process, and the sandbox when no Apple key is configured) and `herald relay`
/// (the relay with a remote provider). The commands only parse flags; tests and the simulations
/// build through the same code.
public struct HeraldServer: Sendable {
    public let configuration: HeraldConfiguration
    let environment: [String: String]
    let logger: Logger

    /// - Parameter environment: where secrets are looked up (HERALD_MASTER_KEY, HERALD_API_KEY,
    ///   HERALD_PROVIDER_SECRET, webhook secrets); the process's environment when nil.
    public init(
        configuration: HeraldConfiguration,
        environment: [String: String]? = nil,
        logger: Logger
    ) {
        self.configuration = configuration
        self.environment = environment ?? ProcessInfo.processInfo.environment
        var logger = logger
        logger.logLevel = configuration.logLevel
        self.logger = logger
    }

    /// `herald serve`: runs until SIGTERM or SIGINT. `ready` gets the banner's lines once the
    /// relay listens.
    public func serve(ready: @escaping @Sendable ([String]) -> Void) async throws {
        let registry = ServerMetrics.bootstrap()
        let keys = ServerKeys(keysDirectory: configuration.keysDirectory, environment: environment)
        let (masterKey, masterSource) = try keys.masterKey()
        let (apiKey, apiKeySource) = try keys.apiKey()
        let store = try await openStore()
        let group = MultiThreadedEventLoopGroup.singleton

        if let apns = configuration.apns {
            let settings = APNsSettings(
                key: apns.key,
                keyID: apns.keyID,
                teamID: apns.teamID,
                url: apns.url,
                caFile: apns.ca,
                connections: apns.connections,
                requestTimeout: Int(apns.requestTimeout.components.seconds),
                tokenCache: configuration.providerTokenPath
            )
            let (client, _) = try settings.makeClient(logger: logger, group: group)
            let fcmClient = try configuration.fcm.map {
                try FCMSettings(serviceAccount: $0.serviceAccount, url: $0.url, caFile: $0.ca)
                    .makeClient(logger: logger, group: group)
            }
            let runtime = try RelayRuntime(
                configuration: configuration,
                store: store,
                masterKey: masterKey,
                apiKey: apiKey,
                sender: ProviderStage(apns: client, fcm: fcmClient),
                platforms: fcmClient == nil ? [.ios] : [.ios, .android],
                registry: registry,
                logger: logger,
                environment: environment
            )
            _ = try await runtime.registerApps(defaultTeam: apns.teamID)
            let apps = try await runtime.relay.activation.apps()
            try await runtime.run(
                extraServices: [client] + (fcmClient.map { [$0] } ?? [])
            ) { port in
                var lines = ["herald serve"]
                lines += runtime.commonLines(
                    port: port,
                    apps: apps,
                    apiKeySource: apiKeySource,
                    masterSource: masterSource
                )
                lines.append("  APNs         \(apns.url) (key \(settings.resolvedKeyID ?? "?"), team \(apns.teamID))")
                if let fcm = configuration.fcm, let fcmClient {
                    lines.append("  FCM          \(fcm.url) (project \(fcmClient.projectID))")
                } else {
                    lines.append("  FCM          off: Android devices are skipped (no --fcm-service-account)")
                }
                ready(lines)
            }
            return
        }
        try await serveWithSandbox(
            store: store,
            masterKey: masterKey,
            masterSource: masterSource,
            apiKey: apiKey,
            apiKeySource: apiKeySource,
            registry: registry,
            ready: ready
        )
    }

    /// No Apple key: the sandbox runs in process, with a development key and FCM service account
    /// registered in it.
    private func serveWithSandbox(
        store: any HeraldStore,
        masterKey: MasterKey,
        masterSource: String,
        apiKey: String,
        apiKeySource: String,
        registry: PrometheusCollectorRegistry,
        ready: @escaping @Sendable ([String]) -> Void
    ) async throws {
        let keysDirectory = configuration.keysDirectory
        let metadata: APNsKeyMetadata
        let accountPath: String
        let account: FCMServiceAccount
        var sandboxConfiguration: SandboxConfiguration
        do {
            metadata = try DevelopmentKeys.developmentAPNsKey(in: keysDirectory)
            accountPath =
                try configuration.fcm?.serviceAccount
                ?? DevelopmentKeys.developmentServiceAccount(in: keysDirectory)
            account = try FCMServiceAccount.load(path: accountPath)
            sandboxConfiguration = SandboxConfiguration(
                tls: try SandboxCertificateAuthority.ensure(directory: keysDirectory)
            )
            sandboxConfiguration.serviceAccounts = [try SandboxServiceAccount(account)]
        } catch let error as HeraldServerError {
            throw error
        } catch {
            throw HeraldServerError.credentials("\(error)")
        }
        sandboxConfiguration.host = "127.0.0.1"
        sandboxConfiguration.apnsPort = configuration.sandboxPorts.apns
        sandboxConfiguration.controlPort = configuration.sandboxPorts.control
        sandboxConfiguration.fcmPort = configuration.sandboxPorts.fcm
        sandboxConfiguration.keys = [
            SandboxKey(keyID: metadata.keyID, teamID: metadata.teamID, publicKeyPEM: metadata.publicKeyPEM)
        ]
        let sandbox = try Sandbox(configuration: sandboxConfiguration, logger: logger)
        let sandboxGroup = ServiceGroup(
            configuration: .init(services: [.init(service: sandbox)], gracefulShutdownSignals: [], logger: logger)
        )
        let logger = logger
        let configuration = configuration
        let environment = environment
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await sandboxGroup.run() }
            let endpoints = try await sandbox.endpoints()
            let group = MultiThreadedEventLoopGroup.singleton
            let settings = APNsSettings(
                key: (keysDirectory as NSString).appendingPathComponent("AuthKey_\(metadata.keyID).p8"),
                keyID: metadata.keyID,
                teamID: metadata.teamID,
                url: endpoints.apnsURL,
                caFile: endpoints.caCertificatePath,
                connections: 2
            )
            let (client, _) = try settings.makeClient(logger: logger, group: group)
            let fcmClient = try FCMSettings(
                serviceAccount: accountPath,
                url: endpoints.fcmURL,
                caFile: endpoints.caCertificatePath,
                tokenURI: endpoints.tokenURL
            ).makeClient(logger: logger, group: group)
            let runtime = try RelayRuntime(
                configuration: configuration,
                store: store,
                masterKey: masterKey,
                apiKey: apiKey,
                sender: ProviderStage(apns: client, fcm: fcmClient),
                registry: registry,
                logger: logger,
                // The sandbox stands in for Apple with the development key: every app is the
                // development team's there, whatever team it names for production.
                onAppSaved: { app in
                    try? sandbox.core.register(app: SandboxApp(bundleID: app.id, teamID: metadata.teamID))
                },
                environment: environment
            )
            _ = try await runtime.registerApps(defaultTeam: metadata.teamID)
            if try await runtime.relay.activation.apps().isEmpty {
                try await runtime.relay.activation.saveApp(AppRecord(id: "com.example.herald", teamID: metadata.teamID))
            }
            let shown = try await runtime.relay.activation.apps()
            for app in shown {
                try? sandbox.core.register(app: SandboxApp(bundleID: app.id, teamID: metadata.teamID))
            }
            do {
                try await runtime.run(extraServices: [client, fcmClient]) { port in
                    var lines = [
                        "herald serve (sandbox mode: no Apple key configured, pushes go to the in-process sandbox)"
                    ]
                    lines += runtime.commonLines(
                        port: port,
                        apps: shown,
                        apiKeySource: apiKeySource,
                        masterSource: masterSource
                    )
                    lines.append(
                        "  sandbox      APNs \(endpoints.apnsURL)   FCM \(endpoints.fcmURL)   control \(endpoints.controlURL)/sandbox"
                    )
                    lines.append("  sandbox CA   \(endpoints.caCertificatePath)")
                    lines.append("  APNs key     AuthKey_\(metadata.keyID) (team \(metadata.teamID))")
                    lines.append(
                        "  FCM account  \(account.clientEmail) (project \(account.projectID), \(accountPath))"
                    )
                    ready(lines)
                }
            } catch {
                await sandboxGroup.triggerGracefulShutdown()
                throw error
            }
            await sandboxGroup.triggerGracefulShutdown()
            try await tasks.next()
        }
    }

    /// `herald relay`: the relay with a remote `herald provider`; runs until SIGTERM or SIGINT.
    public func relay(ready: @escaping @Sendable ([String]) -> Void) async throws {
        guard let provider = configuration.provider else {
            throw HeraldServerError.configuration(
                "--provider-url is needed (or HERALD_PROVIDER_URL, or provider.url in --config)"
            )
        }
        let keys = ServerKeys(keysDirectory: configuration.keysDirectory, environment: environment)
        let (secret, _) = try keys.providerSecret(file: provider.secretFile, make: false)
        let registry = ServerMetrics.bootstrap()
        let (masterKey, masterSource) = try keys.masterKey()
        let (apiKey, apiKeySource) = try keys.apiKey()
        let store = try await openStore()
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let platforms = await Self.platforms(provider: provider.url, http: http, logger: logger)
        let senders = provider.urls.map { url in
            (
                name: url,
                sender: RemotePushSender(url: url, secret: secret, client: http, logger: logger) as any PushSender
            )
        }
        let runtime = try RelayRuntime(
            configuration: configuration,
            store: store,
            masterKey: masterKey,
            apiKey: apiKey,
            sender: senders.count == 1 ? senders[0].sender : ProviderPool(senders, logger: logger),
            platforms: platforms,
            registry: registry,
            logger: logger,
            environment: environment
        )
        do {
            _ = try await runtime.registerApps(defaultTeam: nil)
            let apps = try await runtime.relay.activation.apps()
            try await runtime.run(extraServices: []) { port in
                var lines = ["herald relay"]
                lines += runtime.commonLines(
                    port: port,
                    apps: apps,
                    apiKeySource: apiKeySource,
                    masterSource: masterSource
                )
                lines.append(
                    "  provider     \(provider.urls.joined(separator: ", ")) (pushes to \(platforms.map(\.rawValue).sorted().joined(separator: " and ")))"
                )
                ready(lines)
            }
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    /// Opens the configured store; a database that cannot be reached or used fails the start
    /// with one line naming it.
    private func openStore() async throws(HeraldServerError) -> any HeraldStore {
        switch configuration.database {
        case .sqlite:
            var store = SQLiteStore.Configuration(path: configuration.databasePath)
            store.durable = configuration.durable
            do {
                return try SQLiteStore(configuration: store, logger: logger)
            } catch {
                throw .startup("\(error)")
            }
        case .postgres(let postgres):
            do {
                return try await PostgresStore.open(configuration: postgres, logger: logger)
            } catch {
                throw .startup(error.detail)
            }
        }
    }

    /// The platforms the provider has credentials for, from its `/health`; both when it cannot be
    /// asked now (it may start later), so no device is skipped for want of an answer.
    public static func platforms(provider url: String, http: HTTPClient, logger: Logger) async -> Set<DevicePlatform> {
        let all = Set(DevicePlatform.allCases)
        do {
            let response = try await http.execute(HTTPClientRequest(url: url + "/health"), timeout: .seconds(5))
            let body = try await response.body.collect(upTo: 64 * 1024)
            guard response.status == .ok,
                let health = try? JSONDecoder().decode([String: String].self, from: Data(body.readableBytesView))
            else { return all }
            var platforms = Set<DevicePlatform>()
            if health["apns"] != "off" { platforms.insert(.ios) }
            if health["fcm"] != "off" { platforms.insert(.android) }
            return platforms
        } catch {
            logger.warning(
                "cannot ask the provider which networks it has; assuming APNs and FCM",
                metadata: ["error": "\(error)"]
            )
            return all
        }
    }
}

/// The relay's parts under one `ServiceGroup`: the node (HTTP API, dispatcher) and a janitor.
struct RelayRuntime: Sendable {
    let configuration: HeraldConfiguration
    let node: RelayNode
    let logger: Logger
    /// The webhooks served (the file's and those the environment's secrets turn on), for the banner.
    let adapterNames: [String]
    private let port: PortBox
    private let store: any HeraldStore

    var relay: Relay { node.relay }

    init(
        configuration: HeraldConfiguration,
        store: any HeraldStore,
        masterKey: MasterKey,
        apiKey: String,
        sender: any PushSender,
        platforms: Set<DevicePlatform> = Set(DevicePlatform.allCases),
        registry: PrometheusCollectorRegistry,
        logger: Logger,
        onAppSaved: @escaping @Sendable (AppRecord) -> Void = { _ in },
        environment: [String: String]
    ) throws(HeraldServerError) {
        var parts = RelayNode.Parts(store: store, sender: sender, masterKey: masterKey, apiKey: apiKey)
        parts.relay = configuration.relayConfiguration
        parts.relay.platforms = platforms
        parts.dispatcher = configuration.dispatcherConfiguration
        parts.host = configuration.host
        parts.port = configuration.port
        parts.http = configuration.http
        parts.metrics = registry
        parts.adapters = try configuration.contactCenterAdapters(environment: environment)
        adapterNames = parts.adapters.map(\.name)
        parts.onAppSaved = onAppSaved
        let port = PortBox()
        self.port = port
        self.node = RelayNode(parts, logger: logger) { bound in port.bound(bound) }
        self.store = store
        self.configuration = configuration
        self.logger = logger
    }

    /// Saves the configured apps, filling a missing team id with `defaultTeam`.
    func registerApps(defaultTeam: String?) async throws(HeraldServerError) -> [AppRecord] {
        var all = configuration.apps
        for extra in configuration.extraApps {
            guard let team = extra.teamID ?? defaultTeam else {
                throw .configuration("--app \(extra.bundleID) needs a team id (BUNDLE_ID:TEAM_ID)")
            }
            all.append(AppRecord(id: extra.bundleID, teamID: team))
        }
        for app in all {
            do {
                try await relay.activation.saveApp(app)
            } catch {
                throw .configuration("app \(app.id): \(error.detail)")
            }
        }
        return all
    }

    /// Runs until SIGTERM or SIGINT; `ready` gets the bound port once the API listens.
    ///
    /// Shutdown runs in reverse order: the API stops accepting, the dispatcher finishes the
    /// batches it claimed, then the provider stage (`extraServices`) closes its connections.
    func run(extraServices: [any Service], ready: @escaping @Sendable (Int) -> Void) async throws {
        // Senders an older version stored in the clear (messages', chat events'), sealed before
        // the API can read them.
        let sealed = try await relay.sealClearSenders()
        if sealed > 0 { logger.notice("senders sealed at rest", metadata: ["records": "\(sealed)"]) }
        // Chat pushes that were waiting out their delay when the last run stopped.
        await relay.transcripts.resumeChatPushes()
        port.onBound(ready)
        var background: [any Service] = [Janitor(relay: relay, logger: logger)]
        if case .postgres = configuration.database {
            background.append(ChatTimerSweep(relay: relay))
        }
        let services: [ServiceGroupConfiguration.ServiceConfiguration] =
            (extraServices + [node.services[0]] + background + node.services.dropFirst()).map { .init(service: $0) }
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        )
        do {
            try await group.run()
        } catch {
            await closeStore()
            throw error
        }
        await closeStore()
    }

    /// The database's connections close last, after the dispatcher recorded its last outcomes.
    private func closeStore() async {
        if let postgres = store as? PostgresStore { await postgres.close() }
    }

    /// The banner's lines every relay prints.
    func commonLines(port: Int, apps: [AppRecord], apiKeySource: String, masterSource: String) -> [String] {
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        var lines = [
            "  relay        http://\(host):\(port)/v1   (health /health, metrics /metrics, API docs/openapi.yaml)",
            "  API key      \(apiKeySource)",
            "  master key   \(masterSource)",
            "  database     \(configuration.databaseDescription)",
            "  apps         \(apps.isEmpty ? "none (PUT /v1/apps/{id})" : apps.map { "\($0.id) (team \($0.teamID), \($0.contentPolicy.rawValue))" }.joined(separator: ", "))",
        ]
        if !adapterNames.isEmpty {
            lines.append("  webhooks     \(adapterNames.map { "POST /v1/adapters/\($0)" }.joined(separator: ", "))")
        }
        return lines
    }
}

/// The bound port, handed to whoever asks for it before or after the listener binds.
final class PortBox: Sendable {
    private let state = Mutex<(port: Int?, waiter: (@Sendable (Int) -> Void)?)>((nil, nil))

    func bound(_ port: Int) {
        let waiter = state.withLock { state in
            state.port = port
            return state.waiter
        }
        waiter?(port)
    }

    func onBound(_ waiter: @escaping @Sendable (Int) -> Void) {
        let port = state.withLock { state in
            state.waiter = waiter
            return state.port
        }
        if let port { waiter(port) }
    }
}

/// On a shared database, arms on this node the chats' first-push timers other nodes armed, so a
/// first push fires even when the node that armed it died (the push is written once whichever
/// nodes fire it). A timer armed here already is kept; a push whose delay ended is sent at once,
/// so a dead node's timer fires at most `interval` late.
struct ChatTimerSweep: Service {
    let relay: Relay
    var interval: Duration = .seconds(5)

    func run() async throws {
        while !Task.isShuttingDownGracefully {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            if Task.isShuttingDownGracefully { return }
            await relay.transcripts.resumeChatPushes()
        }
    }
}

/// Deletes messages past their retention, finished pushes older than it, and the chats that
/// ended longer ago with their transcripts, every ten minutes; ends the chats idle too long.
struct Janitor: Service {
    let relay: Relay
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully {
            do {
                let removed = try await relay.ingest.purgeExpired()
                if removed.messages + removed.pushes > 0 {
                    logger.info(
                        "expired messages and old pushes deleted",
                        metadata: ["messages": "\(removed.messages)", "pushes": "\(removed.pushes)"]
                    )
                }
            } catch {
                logger.warning("cannot delete expired messages", metadata: ["error": "\(error)"])
            }
            do {
                let chats = try await relay.transcripts.purgeChats()
                if chats.ended + chats.deleted > 0 {
                    logger.info(
                        "idle chats ended, ended chats past retention deleted",
                        metadata: ["ended": "\(chats.ended)", "deleted": "\(chats.deleted)"]
                    )
                }
            } catch {
                logger.warning("cannot end or delete chats", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(600)) }
        }
    }
}

/// The process's metrics backend: bootstrapped once, read by `/metrics`.
public enum ServerMetrics {
    private static let registry = Mutex<PrometheusCollectorRegistry?>(nil)

    /// The registry `/metrics` shows, made and bootstrapped into swift-metrics on first use.
    public static func bootstrap() -> PrometheusCollectorRegistry {
        registry.withLock { current in
            if let current { return current }
            let made = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: made))
            current = made
            return made
        }
    }
}
