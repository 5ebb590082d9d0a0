import Foundation
import HeraldConsole
import HeraldCrypto
import HeraldProvider
import HeraldPush
import HeraldRelay
import HeraldStore
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization

/// The relay's parts under one `ServiceGroup`: the node (HTTP API, dispatcher, timers), the
/// provider stage and a janitor, in the order they stop (`startOrder`).
struct RelayRuntime: Sendable {
    let configuration: HeraldConfiguration
    let node: RelayNode
    let logger: Logger
    /// The webhooks served (the file's and those the environment's secrets turn on), for the banner.
    let adapterNames: [String]
    /// The configured apps' webhooks with their secrets, by app id.
    let webhooks: [String: WebhookSettings]
    private let port: PortBox
    private let store: any HeraldStore
    /// How many previous API keys are accepted and where they come from, for the banner.
    private let previousAPIKeysLine: String?
    /// The span exporter when tracing is configured (docs/tracing.md): started first, so it
    /// stops last and exports the spans of the last pushes the dispatcher drained.
    private let tracingServices: [any Service]
    /// How to sign in to the console, for the banner (sandbox mode's first operator).
    var consoleLine: String?

    var relay: Relay { node.relay }

    init(
        configuration: HeraldConfiguration,
        store: any HeraldStore,
        masterKey: MasterKey,
        apiKey: String,
        sender: any PushSender,
        platforms: Set<DevicePlatform> = Set(DevicePlatform.allCases),
        fleet: FleetConfiguration = FleetConfiguration(),
        registry: PrometheusCollectorRegistry,
        logger: Logger,
        onAppSaved: @escaping @Sendable (AppRecord) -> Void = { _ in },
        ready: @escaping @Sendable () async -> [String] = { [] },
        console: ConsoleConfiguration? = nil,
        environment: [String: String]
    ) throws(HeraldServerError) {
        let backend = try configuration.tracing?.makeBackend(logger: logger)
        tracingServices = backend.map { [$0.service] } ?? []
        // The provider stage in process makes each push's attempt span in the same traces.
        let sender = backend.flatMap { backend in (sender as? ProviderStage)?.traced(by: backend.tracing) } ?? sender
        var parts = RelayNode.Parts(store: store, sender: sender, masterKey: masterKey, apiKey: apiKey)
        parts.tracing = backend?.tracing ?? .off
        // During a rotation the keys backends still use (read here so every command that runs a
        // relay takes them alike).
        let previous = try ServerKeys(keysDirectory: configuration.keysDirectory, environment: environment)
            .previousAPIKeys()
        parts.previousAPIKeys = previous.keys
        previousAPIKeysLine = previous.source.map { "\(previous.keys.count) previous, \($0)" }
        parts.relay = configuration.relayConfiguration
        parts.relay.platforms = platforms
        parts.relay.fleet = fleet
        parts.dispatcher = configuration.dispatcherConfiguration
        parts.webhooks.retryWindow = configuration.webhookRetryWindow
        webhooks = try configuration.webhookSettings(environment: environment)
        parts.host = configuration.host
        parts.port = configuration.port
        parts.http = configuration.http
        parts.metrics = registry
        parts.adapters = try configuration.contactCenterAdapters(environment: environment)
        adapterNames = parts.adapters.map(\.name)
        parts.onAppSaved = onAppSaved
        parts.ready = ready
        parts.accessLogger = configuration.accessLogger
        let port = PortBox()
        self.port = port
        parts.console = console
        do {
            self.node = try RelayNode(parts, logger: logger) { bound in port.bound(bound) }
        } catch {
            throw .configuration("the console cannot start: \(error)")
        }
        self.store = store
        self.configuration = configuration
        self.logger = logger
    }

    /// Saves the configured apps, filling a missing team id with `defaultTeam`.
    func registerApps(defaultTeam: String?) async throws(HeraldServerError) -> [AppRecord] {
        try await registerApps(of: configuration, webhooks: webhooks, defaultTeam: defaultTeam)
    }

    /// Saves `configuration`'s apps (at start, and again on SIGHUP).
    func registerApps(
        of configuration: HeraldConfiguration,
        webhooks: [String: WebhookSettings],
        defaultTeam: String?
    ) async throws(HeraldServerError) -> [AppRecord] {
        var all = configuration.apps
        for extra in configuration.extraApps {
            guard let team = extra.teamID ?? defaultTeam else {
                throw .configuration("--app \(extra.bundleID) needs a team id (BUNDLE_ID:TEAM_ID)")
            }
            all.append(AppRecord(id: extra.bundleID, teamID: team))
        }
        for (id, _) in webhooks where !all.contains(where: { $0.id == id }) {
            throw .configuration("webhooks.apps.\(id) names no app of the configuration")
        }
        for app in all {
            do {
                try await relay.activation.saveApp(app, webhook: webhooks[app.id])
            } catch {
                throw .configuration("app \(app.id): \(error.detail)")
            }
        }
        return all
    }

    /// Runs until SIGTERM or SIGINT; `ready` gets the bound port once the API listens. The store
    /// runs around this call (`HeraldServer.withStore`): it stops after everything here.
    ///
    /// - Parameters:
    ///   - providers: the provider stage's services (the APNs and FCM clients, the shared
    ///     provider tokens): they send the dispatcher's pushes, so they stop after it.
    ///   - listeners: what takes requests besides the API (SIGHUP's reload): stopped with it.
    func run(
        providers: [any Service],
        listeners: [any Service],
        ready: @escaping @Sendable (Int) -> Void
    ) async throws {
        // Senders an older version stored in the clear (messages', chat events'), sealed before
        // the API can read them.
        let sealed = try await relay.sealClearSenders()
        if sealed > 0 { logger.notice("senders sealed at rest", metadata: ["records": "\(sealed)"]) }
        // The stored API keys, before the API answers its first request.
        try await relay.keys.refresh()
        // Chat pushes that were waiting out their delay when the last run stopped.
        await relay.transcripts.resumeChatPushes()
        port.onBound(ready)
        // The witness is told of the shutdown first: it sees what was open.
        let witness = ShutdownWitness(live: relay.live)
        let group = ServiceGroup(
            configuration: .init(
                services: Self.startOrder(
                    providers: tracingServices + providers,
                    node: node.tiers,
                    background: background,
                    listeners: listeners + [witness]
                ).map { .init(service: $0) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await group.run()
        await logStopped(liveChannels: witness.liveChannelsAtShutdown)
    }

    /// The janitor, and on a shared database the sweep that arms other nodes' chat timers: they
    /// change records on their own, as the node's ingest tier does.
    private var background: [any Service] {
        var background: [any Service] = [Janitor(relay: relay, logger: logger)]
        if case .postgres = configuration.database {
            background.append(ChatTimerSweep(relay: relay))
        }
        return background
    }

    /// The relay's services in the order its `ServiceGroup` starts them; a graceful shutdown
    /// (SIGTERM, SIGINT) stops them one at a time in reverse, each once the one after it
    /// returned (docs/architecture.md, "Shutdown"):
    ///
    /// 1. listeners: the API stops accepting, its live channels close (unacknowledged messages
    ///    fall back to pushes), SIGHUP's reload stops;
    /// 2. ingest: the timers, schedulers and sweeps that queue pushes on their own;
    /// 3. delivery: the dispatcher sends the batches it claimed and writes their outcomes, the
    ///    webhook dispatcher finishes its deliveries;
    /// 4. the provider stage: its clients answer the last pushes, then close their connections.
    ///
    /// The store (and the in-process sandbox) run in a group around this one and stop after it.
    static func startOrder(
        providers: [any Service],
        node: RelayNode.Tiers,
        background: [any Service],
        listeners: [any Service]
    ) -> [any Service] {
        providers + node.delivery + background + node.ingest + node.listeners + listeners
    }

    /// The one line a graceful shutdown ends with: what was finished on the way out, and what is
    /// left for the next start (or, on a shared database, for the other nodes).
    private func logStopped(liveChannels: Int) async {
        let drained = node.dispatcher.drained
        var metadata: Logger.Metadata = [
            "batches_finished": .stringConvertible(drained?.batches ?? 0),
            "pushes_finished": .stringConvertible(drained?.pushes ?? 0),
            "live_channels_closed": .stringConvertible(liveChannels),
        ]
        if let counts = try? await store.outboxCounts() {
            metadata["pushes_queued"] = .stringConvertible(counts[.queued])
        }
        logger.info("stopped: in-flight batches finished", metadata: metadata)
    }

    /// The start-up banner every relay prints: `title`, then where it listens, its keys, database and apps.
    func banner(_ title: String, port: Int, apps: [AppRecord], secrets: HeraldServer.Secrets) -> [String] {
        let (apiKeySource, masterSource) = (secrets.apiKeySource, secrets.masterSource)
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        var lines = [
            title,
            "  relay        http://\(host):\(port)/v1   (health /health, metrics /metrics, API docs/openapi.yaml)",
            "  API key      \(apiKeySource)" + (previousAPIKeysLine.map { "   (also accepted: \($0))" } ?? ""),
            "  master key   \(masterSource)",
            "  database     \(configuration.databaseDescription)",
            "  apps         \(apps.isEmpty ? "none (PUT /v1/apps/{id})" : apps.map { "\($0.id) (team \($0.teamID), \($0.contentPolicy.rawValue))" }.joined(separator: ", "))",
        ]
        if !adapterNames.isEmpty {
            lines.append("  webhooks     \(adapterNames.map { "POST /v1/adapters/\($0)" }.joined(separator: ", "))")
        }
        if let tracing = configuration.tracing {
            lines.append("  tracing      \(tracing.description)")
        }
        if node.console != nil {
            lines.append("  console      http://\(host):\(port)/console" + (consoleLine.map { "   (\($0))" } ?? ""))
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

/// Notes what was open when graceful shutdown began, for the line the runtime logs at the end.
final class ShutdownWitness: Service, Sendable {
    private let live: LiveChannels
    private let count = Mutex<Int>(0)

    init(live: LiveChannels) {
        self.live = live
    }

    var liveChannelsAtShutdown: Int { count.withLock { $0 } }

    func run() async throws {
        try? await gracefulShutdown()
        let open = live.openCount
        count.withLock { $0 = open }
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
        // Cancelled rather than shut down (an in-process server's task), the sleep throws at
        // once: without the cancellation check the loop would spin.
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
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
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                let removed = try await relay.ingest.purgeExpired()
                if removed.messages + removed.pushes > 0 {
                    logger.info(
                        "expired messages and old pushes deleted",
                        metadata: [
                            "messages": .stringConvertible(removed.messages),
                            "pushes": .stringConvertible(removed.pushes),
                        ]
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
                        metadata: [
                            "ended": .stringConvertible(chats.ended), "deleted": .stringConvertible(chats.deleted),
                        ]
                    )
                }
            } catch {
                logger.warning("cannot end or delete chats", metadata: ["error": "\(error)"])
            }
            do {
                let events = try await relay.webhooks.purgeFinished()
                if events > 0 {
                    logger.info(
                        "finished webhook events past retention deleted",
                        metadata: ["events": .stringConvertible(events)]
                    )
                }
            } catch {
                logger.warning("cannot delete finished webhook events", metadata: ["error": "\(error)"])
            }
            do {
                let callbacks = try await relay.callbacks.purgeFinished()
                if callbacks > 0 {
                    logger.info(
                        "finished callbacks past retention deleted",
                        metadata: ["callbacks": .stringConvertible(callbacks)]
                    )
                }
            } catch {
                logger.warning("cannot delete finished callbacks", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(600)) }
        }
    }
}
