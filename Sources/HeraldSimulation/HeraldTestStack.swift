import AsyncHTTPClient
import Crypto
import Foundation
public import HeraldAPNs
public import HeraldAPNsCore
public import HeraldAdapters
public import HeraldConsole
public import HeraldCrypto
public import HeraldDispatch
public import HeraldDomain
public import HeraldFCM
public import HeraldFCMCore
public import HeraldHMS
public import HeraldHMSCore
public import HeraldHTTPSupport
import HeraldProvider
import HeraldProviderHTTP
import HeraldPush
public import HeraldRelay
import HeraldRelayProvider
public import HeraldSandbox
import HeraldServer
public import HeraldStore
public import HeraldStoreSQLite
public import HeraldTracing
public import HeraldWebPush
public import HeraldWebPushCore
import Hummingbird
public import Logging
import NIOCore
public import Prometheus
import ServiceLifecycle
import Synchronization

/// A sandbox on loopback ports the system picks, and on request the provider's clients (APNs,
/// FCM) and a relay as `herald serve` runs it (HTTP API, SQLite store, dispatcher, in-process or
/// remote provider): one call starts them for a test or a simulation, hands back ready parts, and
/// stops them gracefully after.
public final class HeraldTestStack: Sendable {
    /// The sandbox and where it listens.
    public let sandbox: Sandbox
    public let endpoints: SandboxEndpoints
    /// The APNs client, its provider tokens and what its feedback handler was told; nil without `Options.apns`.
    public let apns: APNsClient?
    public let apnsTokens: ProviderTokenManager?
    public let apnsFeedback: Feedback<APNsTokenFeedback>
    /// The FCM sender and what its feedback handler was told; nil without `Options.fcm`.
    public let fcm: FCMClient?
    public let fcmFeedback: Feedback<FCMTokenFeedback>
    /// The Push Kit sender, as the stack's Huawei app.
    public let hms: HMSClient?
    /// The Web Push sender, and the VAPID key it signs with (the relay serves its public half).
    public let webPush: WebPushClient?
    public let vapidKey: VAPIDKey
    /// The relay and its parts; nil without `Options.relay`.
    public let relay: RelayParts?

    /// Signs provider tokens with the key the sandbox knows (for hand-made APNs requests).
    public let signer: ProviderTokenSigner

    /// The sandbox's rules and devices.
    public var core: SandboxCore { sandbox.core }

    /// A relay as the stack runs it.
    public struct RelayParts: Sendable {
        public let relay: Relay
        public let store: SQLiteStore
        public let dispatcher: Dispatcher
        /// `http://127.0.0.1:<port>`.
        public let baseURL: String
        public let apiKey: String
        /// For a second relay on the same store (a restart).
        public let masterKey: MasterKey
    }

    /// What the feedback handler of a client was told, in order.
    public final class Feedback<Event: Sendable>: Sendable {
        private let events = Mutex<[Event]>([])

        init() {}

        func record(_ event: Event) { events.withLock { $0.append(event) } }

        /// Every event so far.
        public var all: [Event] { events.withLock { $0 } }
    }

    /// What to start.
    public struct Options {
        /// The app every part knows, its team and the APNs key's id.
        public var bundleID = "com.example.chat"
        public var teamID = "TEAM123456"
        public var keyID = "KEY1234567"
        /// The FCM service account (the sandbox registers it; the sender uses it).
        public var fcmAccount: FCMServiceAccount
        /// Where everything logs; only critical messages when nil.
        public var logger: Logger?
        /// A change to the sandbox's configuration (ports, apps and keys are set already).
        public var sandbox: (inout SandboxConfiguration) -> Void = { _ in }
        /// Start an APNs client; nil starts none.
        public var apns: APNs? = APNs()
        /// Start an FCM sender; nil starts none.
        public var fcm: FCM? = FCM()
        /// Start a Web Push sender (trusting the sandbox, posting to its loopback endpoints) with
        /// one VAPID key as `default`; nil starts none.
        public var webPush: WebPush? = WebPush()
        /// Start a Push Kit sender as the stack's Huawei app (registered with the sandbox); nil
        /// starts none.
        public var hms: HMS? = HMS()
        /// Start a relay over the clients; nil starts none.
        public var relay: RelayOptions?

        public init(fcmAccount: FCMServiceAccount) {
            self.fcmAccount = fcmAccount
        }
    }

    /// The APNs client's settings: quick retries, for tests.
    public struct APNs {
        public var client: (inout APNsClientConfiguration) -> Void = { _ in }
        public var refreshAfter: Duration = ProviderTokenManager.defaultRefreshAfter
        public var minimumInterval: Duration = ProviderTokenManager.defaultMinimumInterval

        public init() {}
    }

    /// The FCM sender's settings: quick retries, for tests; another account than the sandbox's.
    public struct FCM {
        public var client: (inout FCMClientConfiguration) -> Void = { _ in }
        public var account: FCMServiceAccount?

        public init() {}
    }

    /// The Push Kit sender's settings: the Huawei app the sandbox knows, quick retries.
    public struct HMS {
        public var client: (inout HMSClientConfiguration) -> Void = { _ in }
        public var appID = "109876543"
        public var clientSecret = "sandbox-client-secret-0123456789abcdef"
        /// More Huawei apps of the fleet, by name (an Android package): their app ids, each with
        /// the same secret, each a sender of its own.
        public var moreApps: [String: String] = [:]

        public init() {}
    }

    /// The Web Push sender's settings.
    public struct WebPush {
        public var client: (inout WebPushClientConfiguration) -> Void = { _ in }
        /// The VAPID key's `sub`.
        public var subject = "mailto:tests@herald.invalid"

        public init() {}
    }

    /// The relay's settings.
    public struct RelayOptions {
        /// The app registered with the relay (the stack's bundle id and team when nil).
        public var app: AppRecord?
        /// The app's webhook: without one the relay queues no events for it.
        public var appWebhook: WebhookSettings?
        public var configuration = RelayConfiguration()
        public var dispatcher: (inout DispatcherConfiguration) -> Void = { _ in }
        /// The webhook dispatcher's settings (it polls every 50 ms here).
        public var webhooks: (inout WebhookDispatcherConfiguration) -> Void = { _ in }
        /// Send through a `herald provider` HTTP service (on loopback) instead of in process.
        public var remoteProvider = false
        public var adapters: [any ContactCenterAdapter] = []
        /// Serve `GET /metrics` from this registry (the relay's, and the remote provider's).
        public var metrics: PrometheusCollectorRegistry?
        public var apiKey = "test-api-key-0123456789"
        /// Keys accepted besides `apiKey` (an API key rotation).
        public var previousAPIKeys: [String] = []
        /// The node's one clock (a `TestClock` to move time).
        public var clock: any HeraldClock = WallClock()
        /// Commit with fsync (off for tests: a crash of the test process loses nothing it checks).
        public var durable = false
        /// The relay's (and the remote provider's) HTTP timeouts and connection cap.
        public var http = HTTPConnectionLimits()
        /// The spans of each push's trace, the in-process provider stage's included (off).
        public var tracing = PushTracing.off
        /// The operator console at `/console`; nil leaves it out.
        public var console: ConsoleConfiguration?

        public init() {}
    }

    private init(
        sandbox: Sandbox,
        endpoints: SandboxEndpoints,
        signer: ProviderTokenSigner,
        apns: APNsClient?,
        apnsTokens: ProviderTokenManager?,
        apnsFeedback: Feedback<APNsTokenFeedback>,
        fcm: FCMClient?,
        fcmFeedback: Feedback<FCMTokenFeedback>,
        webPush: WebPushClient?,
        vapidKey: VAPIDKey,
        hms: HMSClient?,
        relay: RelayParts?
    ) {
        self.hms = hms
        self.webPush = webPush
        self.vapidKey = vapidKey
        self.sandbox = sandbox
        self.endpoints = endpoints
        self.signer = signer
        self.apns = apns
        self.apnsTokens = apnsTokens
        self.apnsFeedback = apnsFeedback
        self.fcm = fcm
        self.fcmFeedback = fcmFeedback
        self.relay = relay
    }

    /// The sandbox's development CA, made once per process under the temporary directory.
    public static let tls: SandboxTLS = {
        let directory = NSTemporaryDirectory() + "herald-test-stack-\(getpid())"
        // A CA that cannot be made leaves nothing to test against.
        return try! SandboxCertificateAuthority.ensure(directory: directory)
    }()

    /// Silent, unless HERALD_TEST_LOG_LEVEL names a level (trace, debug, …): then what a failing
    /// test's stack did goes to stderr.
    static func defaultLogger() -> Logger {
        let level = ProcessInfo.processInfo.environment["HERALD_TEST_LOG_LEVEL"].flatMap {
            Logger.Level(rawValue: $0)
        }
        var logger = Logger(label: "herald.test") { label -> any LogHandler in
            level == nil ? SwiftLogNoOpLogHandler(label) : StreamLogHandler.standardError(label: label)
        }
        logger.logLevel = level ?? .critical
        return logger
    }

    /// Starts what `options` asks for, runs `body`, and stops everything gracefully (also when
    /// `body` throws).
    public static func with<T: Sendable>(
        _ options: Options,
        _ body: (HeraldTestStack) async throws -> T
    ) async throws -> T {
        let logger = options.logger ?? defaultLogger()
        let key = P256.Signing.PrivateKey()
        let sandboxSettings = try sandboxConfiguration(options, key: key)
        let sandbox = try Sandbox(configuration: sandboxSettings, logger: logger)
        let sandboxGroup = ServiceGroup(services: [sandbox], logger: logger)
        let directory = NSTemporaryDirectory() + "herald-test-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }

        return try await withThrowingTaskGroup(of: Void.self, returning: T.self) { tasks in
            tasks.addTask { try await sandboxGroup.run() }
            let endpoints = try await sandbox.endpoints()
            var started = Started(sandbox: sandboxGroup)
            do {
                let apnsFeedback = Feedback<APNsTokenFeedback>()
                let apns = try options.apns.map { settings in
                    try makeAPNs(
                        settings,
                        options,
                        endpoints,
                        key: key,
                        clock: sandboxSettings.clock,
                        logger: logger,
                        feedback: apnsFeedback
                    )
                }
                let fcmFeedback = Feedback<FCMTokenFeedback>()
                let fcm = try options.fcm.map { settings in
                    try makeFCM(settings, options, endpoints, logger: logger, feedback: fcmFeedback)
                }
                let vapidKey = VAPIDKey.generate()
                let webPush = try options.webPush.map { settings in
                    try makeWebPush(settings, endpoints, key: vapidKey, logger: logger)
                }
                let hms = try options.hms.map { settings in try makeHMS(settings, endpoints, logger: logger) }
                var huaweiApps: [String: HMSClient] = hms.map { [ProviderStage.defaultName: $0] } ?? [:]
                for (name, appID) in options.hms?.moreApps ?? [:] {
                    var settings = options.hms ?? HMS()
                    settings.appID = appID
                    huaweiApps[name] = try makeHMS(settings, endpoints, logger: logger)
                }
                let clients = ServiceGroup(
                    services: ([apns?.client, fcm, webPush] as [(any Service)?]).compactMap { $0 }
                        + huaweiApps.keys.sorted().compactMap { huaweiApps[$0] },
                    logger: logger
                )
                started.groups.append(clients)
                tasks.addTask { try await clients.run() }

                var parts: RelayParts?
                if var settings = options.relay {
                    let stage = ProviderStage(
                        apnsKeys: apns.map {
                            [
                                ProviderStage.APNsKey(
                                    name: ProviderStage.defaultName,
                                    environment: .development,
                                    clients: [.development: $0.client, .production: $0.client]
                                )
                            ]
                        } ?? [],
                        fcmAccounts: fcm.map { [ProviderStage.defaultName: $0] } ?? [:],
                        webPush: webPush,
                        hmsApps: huaweiApps
                    )
                    .traced(by: settings.tracing)
                    if webPush != nil {
                        settings.configuration.fleet.applicationServerKeys[ProviderStage.defaultName] =
                            vapidKey.applicationServerKey
                        settings.configuration.fleet.allowPrivateWebPushEndpoints = true
                    }
                    var sender: any PushSender = stage
                    if settings.remoteProvider {
                        sender = await startRemoteProvider(stage, settings, logger: logger, &tasks, &started)
                    }
                    parts = try await startRelay(
                        settings,
                        options,
                        sender: sender,
                        path: directory + "/herald.sqlite",
                        logger: logger,
                        &tasks,
                        &started
                    )
                }
                let stack = HeraldTestStack(
                    sandbox: sandbox,
                    endpoints: endpoints,
                    signer: ProviderTokenSigner(privateKey: key, keyID: options.keyID, teamID: options.teamID),
                    apns: apns?.client,
                    apnsTokens: apns?.tokens,
                    apnsFeedback: apnsFeedback,
                    fcm: fcm,
                    fcmFeedback: fcmFeedback,
                    webPush: webPush,
                    vapidKey: vapidKey,
                    hms: hms,
                    relay: parts
                )
                let result = try await body(stack)
                await started.stop()
                try await tasks.waitForAll()
                return result
            } catch {
                await started.stop()
                try? await tasks.waitForAll()
                throw error
            }
        }
    }

    /// What `with` started besides the sandbox, to stop when it ends.
    private struct Started {
        let sandbox: ServiceGroup
        /// In start order.
        var groups: [ServiceGroup] = []
        var httpClients: [HTTPClient] = []

        func stop() async {
            for client in httpClients { try? await client.shutdown() }
            // Relay first, then the provider service, then the clients: the reverse of start.
            for group in groups.reversed() { await group.triggerGracefulShutdown() }
            await sandbox.triggerGracefulShutdown()
        }
    }

    /// The sandbox on ports the system picks, knowing the stack's app, its APNs key (`key`) and
    /// FCM service account, changed as `options.sandbox` says.
    private static func sandboxConfiguration(
        _ options: Options,
        key: P256.Signing.PrivateKey
    ) throws -> SandboxConfiguration {
        var configuration = SandboxConfiguration(tls: tls)
        configuration.apnsPort = 0
        configuration.controlPort = 0
        configuration.fcmPort = 0
        configuration.webPushPort = 0
        configuration.hmsPort = 0
        if let hms = options.hms {
            configuration.hmsApps = ([hms.appID] + hms.moreApps.values.sorted()).map {
                SandboxHMSApp(appID: $0, clientSecret: hms.clientSecret)
            }
        }
        configuration.serviceAccounts = [try SandboxServiceAccount(options.fcmAccount)]
        configuration.apps = [SandboxApp(bundleID: options.bundleID, teamID: options.teamID)]
        configuration.keys = [
            SandboxKey(keyID: options.keyID, teamID: options.teamID, publicKeyPEM: key.publicKey.pemRepresentation)
        ]
        options.sandbox(&configuration)
        return configuration
    }

    /// A `herald provider` HTTP service over `stage` on a loopback port, and a sender to it.
    private static func startRemoteProvider(
        _ stage: ProviderStage,
        _ settings: RelayOptions,
        logger: Logger,
        _ tasks: inout ThrowingTaskGroup<Void, any Error>,
        _ started: inout Started
    ) async -> any PushSender {
        let secret = "provider-secret-0123456789"
        let ports = AsyncStream.makeStream(of: Int.self)
        let provider = Application(
            router: ProviderHTTPService.router(
                stage: stage,
                secret: secret,
                registry: settings.metrics
            ),
            server: .guardedHTTP1(limits: settings.http),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in ports.continuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        let providerGroup = ServiceGroup(services: [provider], logger: logger)
        started.groups.append(providerGroup)
        tasks.addTask { try await providerGroup.run() }
        var bound = ports.stream.makeAsyncIterator()
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        started.httpClients.append(http)
        return RemotePushSender(
            url: "http://127.0.0.1:\(await bound.next() ?? 0)",
            secret: secret,
            client: http,
            logger: logger
        )
    }

    /// A relay node as `herald serve` runs it, on a SQLite store at `path`, with quick dispatcher
    /// and webhook polls, the stack's app registered; answers once its HTTP API listens.
    private static func startRelay(
        _ settings: RelayOptions,
        _ options: Options,
        sender: any PushSender,
        path: String,
        logger: Logger,
        _ tasks: inout ThrowingTaskGroup<Void, any Error>,
        _ started: inout Started
    ) async throws -> RelayParts {
        var storeConfiguration = SQLiteStore.Configuration(path: path)
        storeConfiguration.durable = settings.durable
        let store = try SQLiteStore(configuration: storeConfiguration, logger: logger)
        var node = RelayNode.Parts(
            store: store,
            sender: sender,
            masterKey: MasterKey.generate(),
            apiKey: settings.apiKey
        )
        node.relay = settings.configuration
        node.previousAPIKeys = settings.previousAPIKeys
        node.dispatcher.retryBase = .milliseconds(20)
        node.dispatcher.retryMaximum = .milliseconds(100)
        node.dispatcher.idlePoll = .milliseconds(50)
        settings.dispatcher(&node.dispatcher)
        node.webhooks.idlePoll = .milliseconds(50)
        settings.webhooks(&node.webhooks)
        node.metrics = settings.metrics
        node.adapters = settings.adapters
        node.clock = settings.clock
        node.http = settings.http
        node.tracing = settings.tracing
        node.console = settings.console
        let ports = AsyncStream.makeStream(of: Int.self)
        let relayNode = try RelayNode(node, logger: logger) { ports.continuation.yield($0) }
        let relay = relayNode.relay
        try await relay.activation.saveApp(
            settings.app ?? AppRecord(id: options.bundleID, teamID: options.teamID),
            webhook: settings.appWebhook
        )
        let relayGroup = ServiceGroup(services: relayNode.services, logger: logger)
        started.groups.append(relayGroup)
        tasks.addTask { try await relayGroup.run() }
        var bound = ports.stream.makeAsyncIterator()
        return RelayParts(
            relay: relay,
            store: store,
            dispatcher: relayNode.dispatcher,
            baseURL: "http://127.0.0.1:\(await bound.next() ?? 0)",
            apiKey: settings.apiKey,
            masterKey: node.masterKey
        )
    }
}
