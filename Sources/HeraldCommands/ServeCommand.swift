import ArgumentParser
import Foundation
import HeraldAPNs
import HeraldCrypto
import HeraldFCM
import HeraldFCMCore
import HeraldProvider
import HeraldPush
import HeraldRelay
import HeraldRelayAPI
import HeraldRelayHTTP
import HeraldRelayProvider
import HeraldSandbox
import HeraldStore
import Hummingbird
import HummingbirdWebSocket
import Logging
import Metrics
import NIOCore
import NIOPosix
import Prometheus
import ServiceLifecycle
import Synchronization

/// `herald serve`: the relay and the provider in one process; the sandbox too when no Apple key
/// is configured.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract:
            "Run Herald: the relay and the provider stage in one process (with the sandbox when no Apple key is set).",
        discussion: """
            The relay's API is JSON under /v1 (docs/openapi.yaml), with /health and /metrics. \
            Backend calls take the API key (keys/api.key, made on first start, or HERALD_API_KEY); \
            device calls take the credential the device got at activation. Accepted pushes are \
            committed to SQLite (data/herald.sqlite) before the call returns, and sent by the \
            dispatcher through the provider stage: APNs for iOS devices, FCM for Android ones. With \
            no --apns-key, the sandbox (APNs and FCM) starts in-process with a development key, an \
            FCM service account (keys/fcm-service-account.json) and a CA under keys/, and every app is registered \
            with it. SIGTERM or SIGINT: stop accepting, finish the pushes in flight, exit.
            """
    )

    @OptionGroup var relay: RelayOptions

    @Option(
        name: .customLong("apns-key"),
        help: "Apple's AuthKey_<KEYID>.p8; without it the sandbox runs in-process. (HERALD_APNS_KEY)"
    )
    var apnsKey: String?

    @Option(
        name: .customLong("apns-key-id"),
        help: "The key id; read from the file name when omitted. (HERALD_APNS_KEY_ID)"
    )
    var apnsKeyID: String?

    @Option(name: .customLong("apns-team-id"), help: "The team id of the key. (HERALD_APNS_TEAM_ID)")
    var apnsTeamID: String?

    @Option(
        name: .customLong("apns-environment"),
        help: "development or production. (HERALD_APNS_ENVIRONMENT; default development)"
    )
    var apnsEnvironment: String?

    @Option(
        name: .customLong("apns-url"),
        help: "Another APNs endpoint, such as a sandbox started apart. (HERALD_APNS_URL)"
    )
    var apnsURL: String?

    @Option(name: .customLong("apns-ca"), help: "A CA certificate (PEM) to trust for --apns-url. (HERALD_APNS_CA)")
    var apnsCA: String?

    @Option(name: .customLong("apns-connections"), help: "HTTP/2 connections to APNs. (default 2)")
    var apnsConnections: Int?

    @Option(
        name: .customLong("fcm-service-account"),
        help: """
            A Google service-account JSON file for Android pushes (HERALD_FCM_SERVICE_ACCOUNT); in \
            sandbox mode keys/fcm-service-account.json is made and used when omitted.
            """
    )
    var fcmServiceAccount: String?

    @Option(name: .customLong("fcm-url"), help: "Another FCM endpoint. (HERALD_FCM_URL)")
    var fcmURL: String?

    @Option(name: .customLong("fcm-ca"), help: "A CA certificate (PEM) to trust for --fcm-url. (HERALD_FCM_CA)")
    var fcmCA: String?

    @Option(
        name: .customLong("sandbox-fcm-port"),
        help: "The in-process sandbox's FCM port (messages:send and /token); 0 picks one."
    )
    var sandboxFCMPort: Int = 2196

    @Option(
        name: .customLong("sandbox-apns-port"),
        help: "The in-process sandbox's APNs port; 0 picks one."
    )
    var sandboxAPNsPort: Int = 2197

    @Option(
        name: .customLong("sandbox-control-port"),
        help: "The in-process sandbox's control port; 0 picks one."
    )
    var sandboxControlPort: Int = 2198

    func validate() throws {
        for port in [sandboxAPNsPort, sandboxControlPort, sandboxFCMPort] where !(0...65_535).contains(port) {
            throw ValidationError("sandbox ports must be between 0 and 65535")
        }
        if let apnsConnections, !(1...64).contains(apnsConnections) {
            throw ValidationError("--apns-connections must be between 1 and 64")
        }
    }

    func run() async throws {
        let options = try relay.resolve()
        var logger = Logger(label: "herald.serve")
        logger.logLevel = options.logLevel
        let registry = ServeMetrics.bootstrap()
        let file = options.file.apns
        let key = apnsKey ?? ServeEnvironment.string("HERALD_APNS_KEY") ?? file?.key

        let (masterKey, masterSource) = try options.masterKey()
        let (apiKey, apiKeySource) = try options.apiKey()
        let store = try options.openStore(logger: logger)

        if let key {
            guard let team = apnsTeamID ?? ServeEnvironment.string("HERALD_APNS_TEAM_ID") ?? file?.teamID else {
                throw ValidationError("--apns-team-id is needed with --apns-key")
            }
            let environment =
                apnsEnvironment ?? ServeEnvironment.string("HERALD_APNS_ENVIRONMENT") ?? file?.environment
                ?? "development"
            guard ["development", "production"].contains(environment) else {
                throw ValidationError("--apns-environment must be development or production")
            }
            let url =
                apnsURL ?? ServeEnvironment.string("HERALD_APNS_URL") ?? file?.url
                ?? (environment == "production"
                    ? APNsClientConfiguration.production : APNsClientConfiguration.development)
            let settings = APNsSettings(
                key: key,
                keyID: apnsKeyID ?? ServeEnvironment.string("HERALD_APNS_KEY_ID") ?? file?.keyID,
                teamID: team,
                url: url,
                caFile: apnsCA ?? ServeEnvironment.string("HERALD_APNS_CA") ?? file?.ca,
                connections: apnsConnections ?? file?.connections ?? 2,
                tokenCache: (options.data as NSString).appendingPathComponent("provider-token")
            )
            let (client, _) = try settings.makeClient(logger: logger, group: MultiThreadedEventLoopGroup.singleton)
            let fcmSettings = fcmSettings(file: options.file.fcm)
            let fcmClient = try fcmSettings?.makeClient(logger: logger, group: MultiThreadedEventLoopGroup.singleton)
            let runtime = RelayRuntime(
                options: options,
                store: store,
                masterKey: masterKey,
                apiKey: apiKey,
                sender: ProviderStage(apns: client, fcm: fcmClient),
                platforms: fcmClient == nil ? [.ios] : [.ios, .android],
                registry: registry,
                logger: logger
            )
            _ = try await options.registerApps(with: runtime.relay, defaultTeam: team)
            let apps = try await store.apps()
            try await runtime.run(extraServices: [client] + (fcmClient.map { [$0] } ?? [])) { port in
                print("herald serve")
                runtime.printCommon(port: port, apps: apps, apiKeySource: apiKeySource, masterSource: masterSource)
                print("  APNs         \(url) (key \(settings.resolvedKeyID ?? "?"), team \(team))")
                if let fcmSettings, let fcmClient {
                    print("  FCM          \(fcmSettings.url) (project \(fcmClient.projectID))")
                } else {
                    print("  FCM          off: Android devices are skipped (no --fcm-service-account)")
                }
            }
            return
        }

        // No Apple key: the sandbox runs in-process, with a development key registered in it.
        let metadata = try Self.developmentKey(in: options.keysDir)
        var sandboxConfiguration = SandboxConfiguration(
            tls: try SandboxCertificateAuthority.ensure(directory: options.keysDir)
        )
        sandboxConfiguration.host = "127.0.0.1"
        sandboxConfiguration.apnsPort = sandboxAPNsPort
        sandboxConfiguration.controlPort = sandboxControlPort
        sandboxConfiguration.fcmPort = sandboxFCMPort
        sandboxConfiguration.keys = [
            SandboxKey(keyID: metadata.keyID, teamID: metadata.teamID, publicKeyPEM: metadata.publicKeyPEM)
        ]
        let accountPath =
            try fcmServiceAccount ?? ServeEnvironment.string("HERALD_FCM_SERVICE_ACCOUNT") ?? options.file.fcm?
            .serviceAccount
            ?? Self.developmentServiceAccount(in: options.keysDir)
        let account: FCMServiceAccount
        do {
            account = try FCMServiceAccount.load(path: accountPath)
        } catch {
            throw ValidationError("\(error)")
        }
        sandboxConfiguration.serviceAccounts = [try SandboxServiceAccount(account)]
        let sandbox = try Sandbox(configuration: sandboxConfiguration, logger: logger)
        let sandboxGroup = ServiceGroup(
            configuration: .init(services: [.init(service: sandbox)], gracefulShutdownSignals: [], logger: logger)
        )
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await sandboxGroup.run() }
            let endpoints = try await sandbox.endpoints()
            let settings = APNsSettings(
                key: (options.keysDir as NSString).appendingPathComponent("AuthKey_\(metadata.keyID).p8"),
                keyID: metadata.keyID,
                teamID: metadata.teamID,
                url: endpoints.apnsURL,
                caFile: endpoints.caCertificatePath,
                connections: apnsConnections ?? file?.connections ?? 2
            )
            let (client, _) = try settings.makeClient(logger: logger, group: MultiThreadedEventLoopGroup.singleton)
            let fcmClient = try FCMSettings(
                serviceAccount: accountPath,
                url: endpoints.fcmURL,
                caFile: endpoints.caCertificatePath,
                tokenURI: endpoints.tokenURL
            ).makeClient(logger: logger, group: MultiThreadedEventLoopGroup.singleton)
            let runtime = RelayRuntime(
                options: options,
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
                }
            )
            _ = try await options.registerApps(with: runtime.relay, defaultTeam: metadata.teamID)
            if try await store.apps().isEmpty {
                try await runtime.relay.saveApp(AppRecord(id: "com.example.herald", teamID: metadata.teamID))
            }
            let shown = try await store.apps()
            for app in try await store.apps() {
                try? sandbox.core.register(app: SandboxApp(bundleID: app.id, teamID: metadata.teamID))
            }
            do {
                try await runtime.run(extraServices: [client, fcmClient]) { port in
                    print("herald serve (sandbox mode: no Apple key configured, pushes go to the in-process sandbox)")
                    runtime.printCommon(port: port, apps: shown, apiKeySource: apiKeySource, masterSource: masterSource)
                    print(
                        "  sandbox      APNs \(endpoints.apnsURL)   FCM \(endpoints.fcmURL)   control \(endpoints.controlURL)/sandbox"
                    )
                    print("  sandbox CA   \(endpoints.caCertificatePath)")
                    print("  APNs key     AuthKey_\(metadata.keyID) (team \(metadata.teamID))")
                    print("  FCM account  \(account.clientEmail) (project \(account.projectID), \(accountPath))")
                }
            } catch {
                await sandboxGroup.triggerGracefulShutdown()
                throw error
            }
            await sandboxGroup.triggerGracefulShutdown()
            try await tasks.next()
        }
    }

    /// The FCM settings from flags, environment and configuration file, if any.
    func fcmSettings(file: ServeConfigurationFile.FCM?) -> FCMSettings? {
        guard
            let account = fcmServiceAccount ?? ServeEnvironment.string("HERALD_FCM_SERVICE_ACCOUNT")
                ?? file?.serviceAccount
        else { return nil }
        return FCMSettings(
            serviceAccount: account,
            url: fcmURL ?? ServeEnvironment.string("HERALD_FCM_URL") ?? file?.url ?? FCMClientConfiguration.googleURL,
            caFile: fcmCA ?? ServeEnvironment.string("HERALD_FCM_CA") ?? file?.ca
        )
    }

    /// keys/fcm-service-account.json, made when there is none.
    static func developmentServiceAccount(in directory: String) throws -> String {
        let path = KeysCommand.FCM.path(in: directory)
        if !FileManager.default.fileExists(atPath: path) {
            _ = try KeysCommand.FCM.make(
                in: directory,
                projectID: "herald-sandbox",
                tokenURI: "https://127.0.0.1:2196/token",
                overwrite: false
            )
        }
        return path
    }

    /// The first AuthKey_*.json under `directory`, made when there is none.
    static func developmentKey(in directory: String) throws -> APNsKeyMetadata {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        for name in names where name.hasPrefix("AuthKey_") && name.hasSuffix(".json") {
            let path = (directory as NSString).appendingPathComponent(name)
            let p8 = String(path.dropLast(".json".count)) + ".p8"
            guard FileManager.default.fileExists(atPath: p8), let data = FileManager.default.contents(atPath: path),
                let metadata = try? JSONDecoder().decode(APNsKeyMetadata.self, from: data)
            else { continue }
            return metadata
        }
        return try KeysCommand.APNs.make(in: directory, keyID: nil, teamID: nil, overwrite: false)
    }
}

/// The relay's parts under one `ServiceGroup`: the HTTP API, the dispatcher and a janitor.
struct RelayRuntime: Sendable {
    let options: ResolvedRelayOptions
    let store: any HeraldStore
    let relay: Relay
    let dispatcher: Dispatcher
    let apiKey: String
    let registry: PrometheusCollectorRegistry
    let logger: Logger

    init(
        options: ResolvedRelayOptions,
        store: any HeraldStore,
        masterKey: MasterKey,
        apiKey: String,
        sender: any PushSender,
        platforms: Set<DevicePlatform> = Set(DevicePlatform.allCases),
        registry: PrometheusCollectorRegistry,
        logger: Logger,
        onAppSaved: @escaping @Sendable (AppRecord) -> Void = { _ in }
    ) {
        let dispatcher = Dispatcher(
            store: store,
            sender: sender,
            configuration: options.dispatcherConfiguration,
            logger: logger
        )
        self.options = options
        self.store = store
        self.dispatcher = dispatcher
        var configuration = options.relayConfiguration
        configuration.platforms = platforms
        self.relay = Relay(
            configuration: configuration,
            store: store,
            masterKey: masterKey,
            logger: logger,
            onAccepted: { dispatcher.wake() },
            onAppSaved: onAppSaved
        )
        self.apiKey = apiKey
        self.registry = registry
        self.logger = logger
    }

    /// Runs until SIGTERM or SIGINT; `ready` gets the bound port once the API listens.
    ///
    /// Shutdown runs in reverse order: the API stops accepting, the dispatcher finishes the
    /// batches it claimed, then the provider stage (`extraServices`) closes its connections.
    func run(extraServices: [any Service], ready: @escaping @Sendable (Int) -> Void) async throws {
        let dispatcher = dispatcher
        // Chat pushes that were waiting out their delay when the last run stopped.
        await relay.resumeChatPushes()
        let router = RelayHTTPService.router(
            relay: relay,
            configuration: RelayHTTPConfiguration(apiKey: apiKey),
            registry: registry,
            adapters: try options.adapters(),
            health: { ["pushes_in_flight": dispatcher.pushesInFlight] }
        )
        let host = options.host
        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(webSocketRouter: router),
            configuration: .init(address: .hostname(host, port: options.port), serverName: "herald"),
            onServerRunning: { channel in
                ready(channel.localAddress?.port ?? 0)
                fflush(nil)
            },
            logger: logger
        )
        let janitor = Janitor(relay: relay, logger: logger)
        let services: [ServiceGroupConfiguration.ServiceConfiguration] =
            extraServices.map { .init(service: $0) } + [
                .init(service: dispatcher), .init(service: janitor), .init(service: app),
            ]
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        )
        try await group.run()
    }

    func printCommon(port: Int, apps: [AppRecord], apiKeySource: String, masterSource: String) {
        let host = options.host.contains(":") ? "[\(options.host)]" : options.host
        print("  relay        http://\(host):\(port)/v1   (health /health, metrics /metrics, API docs/openapi.yaml)")
        print("  API key      \(apiKeySource)")
        print("  master key   \(masterSource)")
        print("  database     \(options.databasePath)\(options.durable ? "" : "  (no fsync)")")
        print(
            "  apps         \(apps.isEmpty ? "none (PUT /v1/apps/{id})" : apps.map { "\($0.id) (team \($0.teamID), \($0.contentPolicy.rawValue))" }.joined(separator: ", "))"
        )
        let adapters = (try? options.adapters().map(\.name)) ?? []
        if !adapters.isEmpty {
            print("  webhooks     \(adapters.map { "POST /v1/adapters/\($0)" }.joined(separator: ", "))")
        }
    }
}

/// Deletes messages past their retention, and finished pushes older than it, every ten minutes.
struct Janitor: Service {
    let relay: Relay
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully {
            do {
                let removed = try await relay.purgeExpired()
                if removed.messages + removed.pushes > 0 {
                    logger.info(
                        "expired messages and old pushes deleted",
                        metadata: ["messages": "\(removed.messages)", "pushes": "\(removed.pushes)"]
                    )
                }
            } catch {
                logger.warning("cannot delete expired messages", metadata: ["error": "\(error)"])
            }
            try? await gracefulShutdownOrSleep(for: .seconds(600))
        }
    }

    private func gracefulShutdownOrSleep(for duration: Duration) async throws {
        try await cancelWhenGracefulShutdown { try await Task.sleep(for: duration) }
    }
}

/// The process's metrics backend: bootstrapped once, read by `/metrics`.
enum ServeMetrics {
    private static let registry = Mutex<PrometheusCollectorRegistry?>(nil)

    static func bootstrap() -> PrometheusCollectorRegistry {
        registry.withLock { current in
            if let current { return current }
            let made = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: made))
            current = made
            return made
        }
    }
}
