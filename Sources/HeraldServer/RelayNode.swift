import Foundation
public import HeraldAdapters
public import HeraldConsole
public import HeraldCrypto
public import HeraldDispatch
public import HeraldDomain
public import HeraldHTTPSupport
public import HeraldPush
public import HeraldRelay
import HeraldRelayHTTP
public import HeraldStore
public import HeraldTracing
import HeraldWebhookHTTP
import Hummingbird
import HummingbirdWebSocket
public import Logging
public import Prometheus
public import ServiceLifecycle

/// One relay node's parts, assembled the one way every Herald runs them (`herald serve`,
/// `herald relay`, the test stack, `herald simulate`): the relay over a store, the dispatcher
/// draining its outbox into a push sender, and the HTTP API (with the live-channel WebSocket).
public struct RelayNode: Sendable {
    public let relay: Relay
    public let dispatcher: Dispatcher
    /// Delivers the apps' webhook events from the store's queue.
    public let webhookDispatcher: WebhookDispatcher
    /// The operator console at `/console`, when `Parts.console` turns it on.
    public let console: Console?
    /// The node's services by the order they stop in (docs/architecture.md, "Shutdown").
    public let tiers: Tiers
    /// Every service of `tiers`, in the order a `ServiceGroup` starts them: delivery, then
    /// ingest, then the listener. It stops them in reverse: the API stops accepting (and its live
    /// channels close) before the timers and schedulers stop queueing pushes, and those before the
    /// dispatcher finishes its batches.
    public var services: [any Service] { tiers.delivery + tiers.ingest + tiers.listeners }

    /// A node's services, grouped by when they stop.
    public struct Tiers: Sendable {
        /// What sends what was queued: the dispatcher (which drains its claimed batches and
        /// writes their outcomes when it stops) and the webhook dispatcher. Started first, stopped
        /// last of the node's, after nothing queues anymore.
        public var delivery: [any Service]
        /// What queues pushes or changes records without a request: the relay's timers (chat
        /// first pushes, live acknowledgements), the callbacks falling due, the calls nobody
        /// answered, the live channels' cluster part, the API keys' refresh.
        public var ingest: [any Service]
        /// The HTTP API (with the live channels' WebSockets): started last, stopped first.
        public var listeners: [any Service]
    }

    /// What a node is built from.
    public struct Parts {
        public var store: any HeraldStore
        public var sender: any PushSender
        public var masterKey: MasterKey
        /// The backend's bearer secret.
        public var apiKey: String
        /// Keys accepted besides `apiKey` while backends move to it.
        public var previousAPIKeys: [String] = []
        public var relay = RelayConfiguration()
        public var dispatcher = DispatcherConfiguration()
        /// How webhook events are delivered (claimed in the name of `dispatcher.owner`).
        public var webhooks = WebhookDispatcherConfiguration()
        /// Where webhook requests go: HTTP(S) when not given.
        public var webhookTransport: (any WebhookTransport)?
        public var host = "127.0.0.1"
        /// 0 picks a port.
        public var port = 0
        public var serverName = "herald"
        /// The HTTP listener's timeouts and connection cap.
        public var http = HTTPConnectionLimits()
        /// Serves `GET /metrics` from it.
        public var metrics: PrometheusCollectorRegistry?
        public var adapters: [any ContactCenterAdapter] = []
        /// The node's one clock: the relay's, its timers', the dispatcher's and the API's.
        public var clock: any HeraldClock = WallClock()
        /// Called after an app was added or changed (to register it with an in-process sandbox).
        public var onAppSaved: @Sendable (AppRecord) -> Void = { _ in }
        /// Where the access log goes (one line per request at info); the node's logger when nil.
        public var accessLogger: Logger?
        /// What `/health/ready` checks besides the store (a remote provider): the reasons the node
        /// cannot serve now, empty when it can.
        public var ready: @Sendable () async -> [String] = { [] }
        /// The spans of each push's trace (docs/tracing.md): off unless tracing is configured.
        public var tracing = PushTracing.off
        /// The operator console's settings; nil leaves `/console` out.
        public var console: ConsoleConfiguration?

        public init(store: any HeraldStore, sender: any PushSender, masterKey: MasterKey, apiKey: String) {
            self.store = store
            self.sender = sender
            self.masterKey = masterKey
            self.apiKey = apiKey
        }
    }

    /// - Parameter ready: gets the bound port once the API listens.
    /// - Throws: when the console is on and one of its page templates does not compile.
    public init(_ parts: Parts, logger: Logger, ready: @escaping @Sendable (Int) -> Void) throws {
        let dispatcher = Dispatcher(
            store: parts.store,
            sender: parts.sender,
            configuration: parts.dispatcher,
            logger: logger,
            clock: parts.clock,
            tracing: parts.tracing
        )
        let relay = Relay(
            configuration: parts.relay,
            store: parts.store,
            masterKey: parts.masterKey,
            logger: logger,
            clock: parts.clock,
            onAccepted: { dispatcher.wake() },
            onAppSaved: parts.onAppSaved,
            handOff: dispatcher,
            tracing: parts.tracing
        )
        let router = RelayHTTPService.router(
            relay: relay,
            configuration: {
                var http = RelayHTTPConfiguration(apiKey: parts.apiKey)
                http.previousAPIKeys = parts.previousAPIKeys
                return http
            }(),
            registry: parts.metrics,
            adapters: parts.adapters,
            accessLogger: parts.accessLogger,
            health: { ["pushes_in_flight": dispatcher.pushesInFlight] },
            ready: parts.ready,
            clock: parts.clock
        )
        let console = try parts.console.map { settings in
            try Console(relay: relay, store: parts.store, configuration: settings, clock: parts.clock, logger: logger)
        }
        console?.add(to: router)
        let app = Application(
            router: router,
            server: .guardedHTTP1WebSocketUpgrade(webSocketRouter: router, limits: parts.http),
            configuration: .init(address: .hostname(parts.host, port: parts.port), serverName: parts.serverName),
            onServerRunning: { channel in ready(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        var webhooks = parts.webhooks
        webhooks.owner = parts.dispatcher.owner
        let webhookDispatcher = WebhookDispatcher(
            relay: relay,
            transport: parts.webhookTransport ?? HTTPWebhookTransport(timeout: webhooks.timeout),
            configuration: webhooks,
            logger: logger
        )
        self.relay = relay
        self.dispatcher = dispatcher
        self.webhookDispatcher = webhookDispatcher
        self.console = console
        // Stops after the API, whose live channels close (and withdraw) before it.
        let live = LiveClusterService(
            relay: relay,
            configuration: parts.relay.live,
            store: parts.store,
            clock: parts.clock
        )
        // Calls nobody answered end as missed on whichever node claims them first.
        let callTimers = CallTimerService(relay: relay)
        // Stops before the dispatcher, which then drains what it queued.
        let callbacks = CallbackScheduler(callbacks: relay.callbacks, owner: parts.dispatcher.owner)
        // Escalations queue pushes: it stops before the dispatcher too.
        let deadlines = DeadlineScheduler(deadlines: relay.deadlines, owner: parts.dispatcher.owner)
        let keys = APIKeyRefresh(keys: relay.keys, interval: .seconds(Self.keyRefreshSeconds))
        self.tiers = Tiers(
            delivery: [dispatcher, webhookDispatcher],
            ingest: [keys, callbacks, deadlines, relay.timers, callTimers] + (live.map { [$0] } ?? []),
            // The console's live stream and simulations stop after the listener (its streams
            // end when they do).
            listeners: (console?.services ?? [])
                + [NamedListener(base: app, listener: "the relay", host: parts.host, port: parts.port)]
        )
    }

    /// How often a node reads the stored API keys again: a key made or revoked by
    /// `herald keys api` takes effect within it (at once on SIGHUP).
    public static let keyRefreshSeconds = 2
}
