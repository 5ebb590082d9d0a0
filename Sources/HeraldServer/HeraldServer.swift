public import AsyncHTTPClient
import Foundation
import HeraldAPNs
import HeraldConsole
public import HeraldConsoleCore
import HeraldCrypto
import HeraldFCM
import HeraldFCMCore
import HeraldObservability
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
    /// Resolves the configuration again (the same flags, environment and file), for SIGHUP;
    /// `nil`: SIGHUP changes nothing.
    public var reload: (@Sendable () throws -> HeraldConfiguration)?
    /// What plays the console's simulations (`herald simulate`'s flows); nil: the console's
    /// simulations page says this node plays none.
    public var consoleSimulator: (any ConsoleSimulator)?

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
        let secrets = try Secrets(keys)
        try await Self.withStore(configuration, logger: logger) { store in
            try await serve(store: store, secrets: secrets, registry: registry, ready: ready)
        }
    }

    /// `herald serve` on its open store (running around this call: it stops after everything here).
    private func serve(
        store: any HeraldStore,
        secrets: Secrets,
        registry: PrometheusCollectorRegistry,
        ready: @escaping @Sendable ([String]) -> Void
    ) async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        if let apns = configuration.apnsKeys.first {
            // The provider tokens live in the store, one per key, shared by every node on it (and
            // kept across restarts); the file an earlier release kept one in is only read, once.
            let fleet = try ProviderClients.make(
                configuration: configuration,
                tokenCache: { [configuration] in configuration.providerTokenPath(for: $0) },
                shared: store,
                logger: logger,
                group: group
            )
            let fcmClient = fleet.stage.fcm
            let runtime = try RelayRuntime(
                configuration: configuration,
                store: store,
                masterKey: secrets.masterKey,
                apiKey: secrets.apiKey,
                sender: fleet.stage,
                platforms: configuration.platforms,
                fleet: configuration.fleetConfiguration(knowsCredentials: true),
                registry: registry,
                logger: logger,
                console: console(sandbox: nil),
                environment: environment
            )
            _ = try await runtime.registerApps(defaultTeam: configuration.apns?.teamID ?? apns.teamID)
            let apps = try await runtime.relay.activation.apps()
            await fleet.prepare()
            let reloader = reloader(runtime, defaultTeam: configuration.apns?.teamID ?? apns.teamID)
            try await runtime.run(providers: fleet.services, listeners: reloader) { [configuration] port in
                var lines = runtime.banner("herald serve", port: port, apps: apps, secrets: secrets)
                lines += configuration.apnsBannerLines
                if let fcm = configuration.fcm, let fcmClient {
                    lines.append("  FCM          \(fcm.url) (project \(fcmClient.projectID))")
                } else if configuration.fcmAccounts.isEmpty {
                    lines.append("  FCM          off: Android devices are skipped (no --fcm-service-account)")
                }
                for fcm in configuration.fcmAccounts where fcm.name != configuration.fcm?.name {
                    lines.append("  FCM account  \(fcm.name): \(fcm.serviceAccount) (\(fcm.url))")
                }
                lines += configuration.webPushBannerLines
                lines += configuration.hmsApps.map { "  Push Kit     \($0.name): app \($0.appID) (\($0.url))" }
                ready(lines)
            }
            return
        }
        try await serveWithSandbox(store: store, secrets: secrets, registry: registry, ready: ready)
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
        let secrets = try Secrets(keys)
        try await Self.withStore(configuration, logger: logger) { store in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            do {
                try await relay(
                    store: store,
                    provider: provider,
                    http: http,
                    secret: secret,
                    secrets: secrets,
                    registry: registry,
                    ready: ready
                )
            } catch {
                try? await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }

    /// `herald relay` on its open store (running around this call: it stops after everything here).
    private func relay(
        store: any HeraldStore,
        provider: HeraldConfiguration.RemoteProvider,
        http: HTTPClient,
        secret: String,
        secrets: Secrets,
        registry: PrometheusCollectorRegistry,
        ready: @escaping @Sendable ([String]) -> Void
    ) async throws {
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
            masterKey: secrets.masterKey,
            apiKey: secrets.apiKey,
            sender: senders.count == 1 ? senders[0].sender : ProviderPool(senders, logger: logger),
            platforms: platforms,
            registry: registry,
            logger: logger,
            ready: { await Self.providerReadiness(urls: provider.urls, http: http).map { [$0] } ?? [] },
            console: console(sandbox: nil),
            environment: environment
        )
        _ = try await runtime.registerApps(defaultTeam: nil)
        let apps = try await runtime.relay.activation.apps()
        try await runtime.run(providers: [], listeners: reloader(runtime, defaultTeam: nil)) { port in
            var lines = runtime.banner("herald relay", port: port, apps: apps, secrets: secrets)
            lines.append(
                "  provider     \(provider.urls.joined(separator: ", ")) (pushes to \(platforms.map(\.rawValue).sorted().joined(separator: " and ")))"
            )
            ready(lines)
        }
    }

    /// The store `configuration` names, migrated and open: what the relay runs on. It serves
    /// calls while its service runs (`withStore`).
    static func openStore(
        _ configuration: HeraldConfiguration,
        logger: Logger
    ) async throws(HeraldServerError) -> any HeraldStore {
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

    /// Why no provider can take pushes now (none answers its `/health` with 200 within two
    /// seconds), or `nil` when one can: what `/health/ready` of `herald relay` checks besides its
    /// store. `/health` rather than `/health/live`, which providers before 0.1.0 lack.
    static func providerReadiness(urls: [String], http: HTTPClient) async -> String? {
        var problems: [String] = []
        for url in urls {
            let problem = await HTTPObservability.check("provider \(url)") {
                let response = try await http.execute(HTTPClientRequest(url: url + "/health"), timeout: .seconds(2))
                guard response.status == .ok else { throw ProviderNotReady(status: Int(response.status.code)) }
            }
            guard let problem else { return nil }
            problems.append(problem)
        }
        return problems.joined(separator: "; ")
    }

    /// A provider answered its health check with another status than 200.
    struct ProviderNotReady: Error, CustomStringConvertible {
        var status: Int
        var description: String { "answered HTTP \(status)" }
    }

    /// The platforms the provider has credentials for, from its `/health`; both when it cannot be
    /// asked now (it may start later), so no device is skipped for want of an answer.
    public static func platforms(provider url: String, http: HTTPClient, logger: Logger) async -> Set<DevicePlatform> {
        let all: Set<DevicePlatform> = [.ios, .android]
        do {
            let response = try await http.execute(HTTPClientRequest(url: url + "/health"), timeout: .seconds(5))
            let body = try await response.body.collect(upTo: 64 * 1024)
            guard response.status == .ok,
                let health = try? JSONDecoder().decode([String: String].self, from: Data(body.readableBytesView))
            else { return all }
            var platforms = Set<DevicePlatform>()
            if health["apns"] != "off" { platforms.insert(.ios) }
            if health["fcm"] != "off" { platforms.insert(.android) }
            // An older provider does not say: it has no Web Push sender.
            if health["webpush"] == "on" { platforms.insert(.web) }
            if health["hms"] == "on" { platforms.insert(.huawei) }
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

extension HeraldConfiguration {
    /// The platforms the configured credentials push to: iOS always, Android with an FCM
    /// account, browsers with a VAPID key.
    var platforms: Set<DevicePlatform> {
        var platforms: Set<DevicePlatform> = [.ios]
        if !fcmAccounts.isEmpty { platforms.insert(.android) }
        if !vapidKeys.isEmpty { platforms.insert(.web) }
        if !hmsApps.isEmpty { platforms.insert(.huawei) }
        return platforms
    }

    /// The banner's Web Push lines: each VAPID key, or why browsers are skipped.
    var webPushBannerLines: [String] {
        guard !vapidKeys.isEmpty else {
            return ["  Web Push     off: browsers are skipped (no vapid_keys; docs/webpush.md)"]
        }
        return vapidKeys.map { "  VAPID key    \($0.name): \($0.key) (\($0.subject))" }
    }

    /// The access log's logger: `herald.access`, through the process's log handler, at the
    /// configured level.
    var accessLogger: Logger {
        var access = Logger(label: "herald.access")
        access.logLevel = logLevel
        return access
    }
}

/// The process's metrics backend: bootstrapped once, read by `/metrics`.
public enum ServerMetrics {
    private static let registry = Mutex<PrometheusCollectorRegistry?>(nil)

    /// The registry `/metrics` shows, made and bootstrapped into swift-metrics on first use.
    /// A process whose metrics backend was bootstrapped already, by someone else (a test process
    /// running servers in process), keeps that backend: swift-metrics allows one bootstrap.
    public static func bootstrap() -> PrometheusCollectorRegistry {
        registry.withLock { current in
            if let current { return current }
            let made = PrometheusCollectorRegistry()
            if MetricsSystem.factory is NOOPMetricsHandler {
                MetricsSystem.bootstrap(HeraldMetricsFactory(registry: made))
            }
            current = made
            return made
        }
    }
}

extension HeraldServer {
    /// The SIGHUP service of a runtime, when the command can resolve its configuration again.
    func reloader(_ runtime: RelayRuntime, defaultTeam: String?) -> [any Service] {
        guard let reload else { return [] }
        return [
            ConfigurationReload(
                relay: runtime.relay,
                load: reload,
                apply: { [environment] configuration throws(HeraldServerError) in
                    try await runtime.registerApps(
                        of: configuration,
                        webhooks: try configuration.webhookSettings(environment: environment),
                        defaultTeam: defaultTeam
                    )
                },
                logger: logger
            )
        ]
    }
}
