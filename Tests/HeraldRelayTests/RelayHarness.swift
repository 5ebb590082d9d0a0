import AsyncHTTPClient
import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldAdapters
import HeraldCrypto
import HeraldFCM
import HeraldFCMCore
import HeraldProvider
import HeraldProviderHTTP
import HeraldPush
import HeraldRelay
import HeraldRelayAPI
import HeraldRelayHTTP
import HeraldRelayProvider
import HeraldSandbox
import HeraldStore
import HeraldStoreSQLite
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import Prometheus
import ServiceLifecycle
import Synchronization
import Testing

/// The relay as `herald serve` runs it, on loopback: its HTTP API, SQLite store, dispatcher and
/// APNs client, against a real sandbox over HTTP/2 + TLS. A test clock lets presence age and
/// fires the relay's timers; the metrics all of it makes go to a registry of the test's own.
final class RelayHarness: Sendable {
    static let bundleID = "com.example.chat"
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let apiKey = "test-api-key-0123456789"

    static let tls: SandboxTLS = {
        let directory = NSTemporaryDirectory() + "herald-relay-tests-\(getpid())"
        return try! SandboxCertificateAuthority.ensure(directory: directory)
    }()

    /// The FCM service account the relay's sender uses, registered with the sandbox.
    static let fcmAccount = try! FCMServiceAccount.generate(projectID: "herald-test", tokenURI: "https://unused/token")

    let sandbox: Sandbox
    let relay: Relay
    /// The relay's master key, for a second relay on the same store (a restart).
    let masterKey: MasterKey
    let store: SQLiteStore
    let http: HTTPClient
    let baseURL: String
    let clock: TestClock
    /// Every metric this harness's relay, dispatcher and clients made, and nothing else.
    let metrics: PrometheusCollectorRegistry

    private init(
        sandbox: Sandbox,
        relay: Relay,
        masterKey: MasterKey,
        store: SQLiteStore,
        http: HTTPClient,
        baseURL: String,
        clock: TestClock,
        metrics: PrometheusCollectorRegistry
    ) {
        self.sandbox = sandbox
        self.relay = relay
        self.masterKey = masterKey
        self.store = store
        self.http = http
        self.baseURL = baseURL
        self.clock = clock
        self.metrics = metrics
    }

    var core: SandboxCore { sandbox.core }

    /// A series' value in this harness's metrics (0 before it is written).
    func metric(_ series: String) -> Double {
        TestMetrics.value(series, in: metrics.emitToString())
    }

    struct Setup {
        var app = AppRecord(id: RelayHarness.bundleID, teamID: RelayHarness.teamID)
        var dispatcher: (inout DispatcherConfiguration) -> Void = { _ in }
        var client: (inout APNsClientConfiguration) -> Void = { _ in }
        /// Serve `GET /metrics` (from the harness's own registry).
        var servesMetrics = false
        /// Where the relay, the sandbox and the clients log; `nil` keeps only critical messages.
        var logger: Logger? = nil
        /// Send through a `herald provider` HTTP service (on loopback) instead of in-process.
        var remoteProvider = false
        /// The relay's settings (chat semantics among them).
        var relay = RelayConfiguration()
        /// Contact-center webhooks to serve.
        var adapters: [any ContactCenterAdapter] = []
    }

    static func with(_ setup: Setup = Setup(), _ body: (RelayHarness) async throws -> Void) async throws {
        try await TestMetrics.isolated { registry in try await run(setup, metrics: registry, body) }
    }

    private static func run(
        _ setup: Setup,
        metrics: PrometheusCollectorRegistry,
        _ body: (RelayHarness) async throws -> Void
    ) async throws {
        let key = P256.Signing.PrivateKey()
        var sandboxConfiguration = SandboxConfiguration(tls: tls)
        sandboxConfiguration.apnsPort = 0
        sandboxConfiguration.controlPort = 0
        sandboxConfiguration.fcmPort = 0
        sandboxConfiguration.serviceAccounts = [try SandboxServiceAccount(fcmAccount.account)]
        sandboxConfiguration.apps = [SandboxApp(bundleID: setup.app.id, teamID: teamID)]
        sandboxConfiguration.keys = [
            SandboxKey(keyID: keyID, teamID: teamID, publicKeyPEM: key.publicKey.pemRepresentation)
        ]
        let logger =
            setup.logger
            ?? {
                var logger = Logger(label: "test.relay")
                logger.logLevel = .critical
                return logger
            }()
        let sandbox = try Sandbox(configuration: sandboxConfiguration, logger: logger)
        let sandboxGroup = ServiceGroup(services: [sandbox], logger: logger)
        let directory = NSTemporaryDirectory() + "herald-relay-\(UUID().uuidString)"
        let providerStop = Mutex<ServiceGroup?>(nil)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await sandboxGroup.run() }
            let endpoints = try await sandbox.endpoints()

            var clientConfiguration = try APNsClientConfiguration(url: endpoints.apnsURL)
            clientConfiguration.caCertificatePath = endpoints.caCertificatePath
            clientConfiguration.serverHostname = "localhost"
            clientConfiguration.retryBaseDelay = .milliseconds(5)
            clientConfiguration.retryMaximumDelay = .milliseconds(20)
            setup.client(&clientConfiguration)
            let tokens = ProviderTokenManager(
                signer: ProviderTokenSigner(privateKey: key, keyID: keyID, teamID: teamID),
                now: { Int64(Date().timeIntervalSince1970) }
            )
            let client = try APNsClient(configuration: clientConfiguration, tokens: tokens, logger: logger)
            var fcmAccount = fcmAccount.account
            fcmAccount.tokenURI = endpoints.tokenURL
            var fcmConfiguration = FCMClientConfiguration(account: fcmAccount)
            fcmConfiguration.baseURL = endpoints.fcmURL
            fcmConfiguration.caCertificatePath = endpoints.caCertificatePath
            fcmConfiguration.retryBaseDelay = .milliseconds(5)
            fcmConfiguration.retryMaximumDelay = .milliseconds(20)
            let fcmClient = try FCMClient(configuration: fcmConfiguration, logger: logger)
            let stage = ProviderStage(apns: client, fcm: fcmClient)

            var storeConfiguration = SQLiteStore.Configuration(path: directory + "/herald.sqlite")
            storeConfiguration.durable = false
            let store = try SQLiteStore(configuration: storeConfiguration, logger: logger)
            let clock = TestClock()
            let services: [any Service] = [client, fcmClient]
            let sender: any PushSender
            let providerHTTP = HTTPClient(eventLoopGroupProvider: .singleton)
            if setup.remoteProvider {
                let secret = "provider-secret-0123456789"
                let providerPorts = AsyncStream.makeStream(of: Int.self)
                let provider = Application(
                    router: ProviderHTTPService.router(stage: stage, secret: secret),
                    configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                    onServerRunning: { channel in providerPorts.continuation.yield(channel.localAddress?.port ?? 0) },
                    logger: logger
                )
                let providerGroup = ServiceGroup(services: [provider], logger: logger)
                tasks.addTask { try await providerGroup.run() }
                var ports = providerPorts.stream.makeAsyncIterator()
                let providerPort = await ports.next() ?? 0
                sender = RemotePushSender(
                    url: "http://127.0.0.1:\(providerPort)",
                    secret: secret,
                    client: providerHTTP,
                    logger: logger
                )
                providerStop.withLock { $0 = providerGroup }
            } else {
                sender = stage
            }
            var dispatcherConfiguration = DispatcherConfiguration()
            dispatcherConfiguration.retryBase = .milliseconds(20)
            dispatcherConfiguration.retryMaximum = .milliseconds(100)
            dispatcherConfiguration.idlePoll = .milliseconds(50)
            setup.dispatcher(&dispatcherConfiguration)
            let dispatcher = Dispatcher(
                store: store,
                sender: sender,
                configuration: dispatcherConfiguration,
                logger: logger,
                now: { clock.now() }
            )
            let masterKey = MasterKey.generate()
            let relay = Relay(
                configuration: setup.relay,
                store: store,
                masterKey: masterKey,
                logger: logger,
                now: { clock.now() },
                sleep: { try await clock.sleep(until: $0) },
                onAccepted: { dispatcher.wake() }
            )
            try await relay.activation.saveApp(setup.app)

            let ports = AsyncStream.makeStream(of: Int.self)
            let router = RelayHTTPService.router(
                relay: relay,
                configuration: RelayHTTPConfiguration(apiKey: apiKey),
                registry: setup.servesMetrics ? metrics : nil,
                adapters: setup.adapters
            )
            let app = Application(
                router: router,
                server: .http1WebSocketUpgrade(webSocketRouter: router),
                configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { channel in ports.continuation.yield(channel.localAddress?.port ?? 0) },
                logger: logger
            )
            let relayGroup = ServiceGroup(
                services: services + [dispatcher, app],
                logger: logger
            )
            tasks.addTask { try await relayGroup.run() }
            var iterator = ports.stream.makeAsyncIterator()
            let port = await iterator.next() ?? 0
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let harness = RelayHarness(
                sandbox: sandbox,
                relay: relay,
                masterKey: masterKey,
                store: store,
                http: http,
                baseURL: "http://127.0.0.1:\(port)",
                clock: clock,
                metrics: metrics
            )
            func stop() async {
                try? await http.shutdown()
                await relayGroup.triggerGracefulShutdown()
                if let providerGroup = providerStop.withLock({ $0 }) { await providerGroup.triggerGracefulShutdown() }
                try? await providerHTTP.shutdown()
                await sandboxGroup.triggerGracefulShutdown()
            }
            do {
                try await body(harness)
            } catch {
                await stop()
                throw error
            }
            await stop()
            try await tasks.waitForAll()
        }
    }

    // MARK: HTTP

    struct Reply {
        var status: Int
        var headers: [(String, String)]
        var body: Data

        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
        }

        var text: String { String(decoding: body, as: UTF8.self) }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try JSONDecoder().decode(T.self, from: body)
        }
    }

    enum Auth {
        case none
        case apiKey
        case bearer(String)
    }

    func call(
        _ method: HTTPMethod,
        _ path: String,
        auth: Auth = .apiKey,
        body: String? = nil,
        headers: [(String, String)] = []
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        switch auth {
        case .none: break
        case .apiKey: request.headers.add(name: "authorization", value: "Bearer " + Self.apiKey)
        case .bearer(let token): request.headers.add(name: "authorization", value: "Bearer " + token)
        }
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await http.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 16 * 1024 * 1024)
        return Reply(
            status: Int(response.status.code),
            headers: response.headers.map { ($0.name.lowercased(), $0.value) },
            body: Data(bytes.readableBytesView)
        )
    }

    func call(_ method: HTTPMethod, _ path: String, auth: Auth = .apiKey, json: some Encodable) async throws -> Reply {
        let data = try JSONEncoder().encode(json)
        return try await call(method, path, auth: auth, body: String(decoding: data, as: UTF8.self))
    }

    // MARK: Devices

    /// A phone: its sandbox device (tokens), its key pair and what activation gave it.
    struct Phone: Sendable {
        var sandboxDevice: SandboxDevice
        var keys: KeyPair
        var activation: ActivationResponse

        var deviceID: String { activation.deviceID }
        var messagingToken: String { sandboxDevice.messagingToken ?? "" }
        var voipToken: String { sandboxDevice.voipToken ?? "" }
        var credential: String { activation.deviceCredential }

        func sessionKeys() throws -> SessionKeys {
            try KeyExchange.deviceSessionKeys(device: keys, relay: try PublicKey(base64: activation.relayPublicKey))
        }
    }

    /// Registers a device with the sandbox and activates it for `user`.
    func phone(
        user: String,
        messaging: Bool = true,
        voip: Bool = true,
        bundleID: String = RelayHarness.bundleID
    ) async throws -> Phone {
        let device = try core.registerDevice(bundleID: bundleID)
        let keys = KeyPair.generate()
        let request = ActivationRequest(
            userID: user,
            app: bundleID,
            platform: .ios,
            publicKey: keys.publicKey.base64,
            messagingToken: messaging ? device.messagingToken : nil,
            voipToken: voip ? device.voipToken : nil
        )
        let reply = try await call(.POST, "/v1/activations", json: request)
        try #require(reply.status == 201, "activation answered \(reply.status): \(reply.text)")
        return Phone(sandboxDevice: device, keys: keys, activation: try reply.decode(ActivationResponse.self))
    }

    /// Registers an Android device (FCM token) with the sandbox and activates it for `user`.
    func androidPhone(user: String, bundleID: String = RelayHarness.bundleID) async throws -> Phone {
        let device = try core.registerDevice(
            bundleID: bundleID,
            platform: .android,
            projectID: Self.fcmAccount.account.projectID
        )
        let keys = KeyPair.generate()
        let request = ActivationRequest(
            userID: user,
            app: bundleID,
            platform: .android,
            publicKey: keys.publicKey.base64,
            messagingToken: device.messagingToken,
            voipToken: nil
        )
        let reply = try await call(.POST, "/v1/activations", json: request)
        try #require(reply.status == 201, "activation answered \(reply.status): \(reply.text)")
        return Phone(sandboxDevice: device, keys: keys, activation: try reply.decode(ActivationResponse.self))
    }

    /// FCM messages the sandbox accepted for a token.
    func acceptedFCM(token: String) -> [SandboxFCMInspectionRecord] {
        core.fcmInspection(token: token).filter { $0.kind == .send && $0.status == 200 }
    }

    // MARK: Waiting

    /// Polls until `condition` holds (state kept by the store has no change signal), failing
    /// after `timeout`.
    func eventually(
        _ what: String,
        timeout: Duration = .seconds(10),
        _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("timed out waiting for \(what)")
        throw HarnessError.timeout(what)
    }

    /// Waits until the push reaches `state`, and returns its status.
    @discardableResult
    func push(_ id: String, reaches state: PushState, timeout: Duration = .seconds(10)) async throws -> PushStatusView {
        var last: PushStatusView?
        try await eventually(
            "push \(id) to be \(state.rawValue) (last: \(last?.state.rawValue ?? "none"))",
            timeout: timeout
        ) {
            last = try await relay.ingest.pushStatus(id: id)
            return last?.state == state
        }
        return last!
    }

    /// Accepted requests the sandbox logged for a token.
    func accepted(token: String) -> [SandboxInspectionRecord] {
        core.inspection(token: token).filter { $0.status == 200 }
    }
}

enum HarnessError: Error {
    case timeout(String)
}

/// The relay's and the dispatcher's clock in tests: real time plus an offset the test moves
/// with `advance(by:)`, or, after `freeze()`, a time that moves only then (for exact
/// boundaries). `sleep(until:)` returns once `now()` reads the deadline, whether real time or an
/// advance brought it there: a timer set far ahead fires when the test moves the clock, never by
/// winning or losing a race with real time.
final class TestClock: Sendable {
    private enum Waiter {
        case waiting(CheckedContinuation<Void, Never>)
        case cancelled
    }

    private struct State {
        var offset: Int64 = 0
        var frozenAt: Int64?
        /// Counts the advances, so that a sleeper that read the time before one knows it happened.
        var generation: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0

        var now: Int64 { frozenAt ?? RelayClock.now() + offset }
    }

    private let state = Mutex(State())

    /// Milliseconds since the epoch.
    func now() -> Int64 { state.withLock { $0.now } }

    /// How many `sleep(until:)` calls are waiting: a timer that woke on an advance and found
    /// its deadline not yet reached counts again once it has gone back to sleep.
    var sleepers: Int {
        state.withLock { state in
            state.waiters.values.count { waiter in
                if case .waiting = waiter { true } else { false }
            }
        }
    }

    /// Stops real time: from now on the clock moves only when advanced.
    func freeze() {
        state.withLock { state in state.frozenAt = state.now }
    }

    /// Moves the clock forward and wakes every sleeper to check its deadline again.
    func advance(by duration: Duration) {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if let frozenAt = state.frozenAt {
                state.frozenAt = frozenAt + milliseconds
            } else {
                state.offset += milliseconds
            }
            state.generation += 1
            defer { state.waiters.removeAll() }
            return state.waiters.values.compactMap { waiter in
                guard case .waiting(let continuation) = waiter else { return nil }
                return continuation
            }
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns once `now()` reads at least `deadline`; throws `CancellationError` when cancelled.
    func sleep(until deadline: Int64) async throws {
        while true {
            let (remaining, generation, frozen) = state.withLock { state in
                (deadline - state.now, state.generation, state.frozenAt != nil)
            }
            guard remaining > 0 else { break }
            try Task.checkCancellation()
            // Whichever comes first: real time reaching the deadline, or an advance.
            await withTaskGroup(of: Void.self) { group in
                if !frozen { group.addTask { try? await Task.sleep(for: .milliseconds(remaining)) } }
                group.addTask { await self.advanced(since: generation) }
                await group.next()
                group.cancelAll()
            }
        }
        try Task.checkCancellation()
    }

    /// Returns after the first advance past `generation` (at once if there was one), or when
    /// the task is cancelled.
    private func advanced(since generation: UInt64) async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.generation != generation { return true }
                    if case .cancelled = state.waiters[id] {
                        state.waiters[id] = nil
                        return true
                    }
                    state.waiters[id] = .waiting(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if case .waiting(let continuation) = state.waiters.removeValue(forKey: id) { return continuation }
                // Not registered yet: the registration sees this and returns at once.
                state.waiters[id] = .cancelled
                return nil
            }
            waiting?.resume()
        }
    }
}
