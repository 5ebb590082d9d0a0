import AsyncHTTPClient
import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldAdapters
import HeraldCrypto
import HeraldDispatch
import HeraldEncoding
import HeraldFCM
import HeraldFCMCore
import HeraldHTTPSupport
import HeraldProvider
import HeraldProviderHTTP
import HeraldPush
import HeraldRelay
import HeraldRelayAPI
import HeraldRelayHTTP
import HeraldRelayProvider
import HeraldSandbox
import HeraldSimulation
import HeraldStore
import HeraldStoreSQLite
import HeraldTestSupport
import HeraldTracing
import HeraldWebPush
import HeraldWebPushCore
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

    /// The relay's HTTP port.
    var port: Int { Int(baseURL.split(separator: ":").last ?? "") ?? 0 }

    /// A series' value in this harness's metrics (0 before it is written).
    func metric(_ series: String) -> Double {
        TestMetrics.value(series, in: metrics.emitToString())
    }

    struct Setup {
        /// The default setup, with the app's events queued for `unansweredWebhook`.
        static var recordingEvents: Setup {
            var setup = Setup()
            setup.appWebhook = RelayHarness.unansweredWebhook
            return setup
        }

        var app = AppRecord(id: RelayHarness.bundleID, teamID: RelayHarness.teamID)
        var dispatcher: (inout DispatcherConfiguration) -> Void = { _ in }
        var webhooks: (inout WebhookDispatcherConfiguration) -> Void = { _ in }
        /// The app's webhook; without one the relay queues no events (`recordingEvents` has one).
        var appWebhook: WebhookSettings? = nil
        var client: (inout APNsClientConfiguration) -> Void = { _ in }
        /// More Huawei apps, by package: their app ids (each its own Push Kit sender).
        var moreHuaweiApps: [String: String] = [:]
        /// A change to the Web Push sender (its VAPID signers among them).
        var webPush: (inout WebPushClientConfiguration) -> Void = { _ in }
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
        /// The HTTP listener's timeouts and connection cap.
        var http = HTTPConnectionLimits()
        /// Keys accepted besides the harness's API key (a rotation).
        var previousAPIKeys: [String] = []
        /// The spans of each push's trace (off).
        var tracing = PushTracing.off
    }

    /// A webhook no receiver answers (connections refused): the relay queues the app's events and
    /// keeps retrying them, so tests can read what was written without a receiver.
    static let unansweredWebhook = WebhookSettings(
        url: "http://127.0.0.1:9/herald-events",
        secret: String(repeating: "k", count: WebhookSettings.minimumSecretBytes)
    )

    static func with(_ setup: Setup = Setup(), _ body: (RelayHarness) async throws -> Void) async throws {
        try await TestMetrics.isolated { registry in try await run(setup, metrics: registry, body) }
    }

    private static func run(
        _ setup: Setup,
        metrics: PrometheusCollectorRegistry,
        _ body: (RelayHarness) async throws -> Void
    ) async throws {
        let clock = TestClock()
        var options = HeraldTestStack.Options(fcmAccount: fcmAccount.account)
        options.bundleID = setup.app.id
        options.teamID = teamID
        options.keyID = keyID
        options.logger = setup.logger
        options.apns?.client = setup.client
        options.webPush?.client = setup.webPush
        options.hms?.moreApps = setup.moreHuaweiApps
        var relay = HeraldTestStack.RelayOptions()
        relay.app = setup.app
        relay.configuration = setup.relay
        relay.dispatcher = { configuration in
            // The test clock jumps by minutes, past a claim's lease: an outcome still waiting to
            // be recorded then would see its push's lease taken back and the push sent again.
            // Outcomes are recorded at once here; the lease is meant to outlast the wait by far.
            configuration.outcomeLinger = .zero
            setup.dispatcher(&configuration)
        }
        relay.webhooks = setup.webhooks
        relay.appWebhook = setup.appWebhook
        relay.remoteProvider = setup.remoteProvider
        relay.adapters = setup.adapters
        relay.http = setup.http
        relay.metrics = setup.servesMetrics ? metrics : nil
        relay.apiKey = apiKey
        relay.previousAPIKeys = setup.previousAPIKeys
        relay.tracing = setup.tracing
        relay.clock = clock
        options.relay = relay
        try await HeraldTestStack.with(options) { stack in
            let parts = try #require(stack.relay)
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let harness = RelayHarness(
                sandbox: stack.sandbox,
                relay: parts.relay,
                masterKey: parts.masterKey,
                store: parts.store,
                http: http,
                baseURL: parts.baseURL,
                clock: clock,
                metrics: metrics
            )
            do {
                try await body(harness)
            } catch {
                try? await http.shutdown()
                throw error
            }
            try await http.shutdown()
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

    /// Registers an Android device (an FCM token, or with `huawei` a Push Kit token for the
    /// stack's Huawei app) with the sandbox and activates it for `user`.
    func androidPhone(
        user: String,
        bundleID: String = RelayHarness.bundleID,
        huawei: Bool = false,
        huaweiApp: String = HeraldTestStack.HMS().appID
    ) async throws -> Phone {
        let device = try core.registerDevice(
            bundleID: bundleID,
            platform: huawei ? .huawei : .android,
            projectID: huawei ? huaweiApp : Self.fcmAccount.account.projectID
        )
        let keys = KeyPair.generate()
        let request = ActivationRequest(
            userID: user,
            app: bundleID,
            platform: huawei ? .huawei : .android,
            publicKey: keys.publicKey.base64,
            messagingToken: device.messagingToken,
            voipToken: nil
        )
        let reply = try await call(.POST, "/v1/activations", json: request)
        try #require(reply.status == 201, "activation answered \(reply.status): \(reply.text)")
        return Phone(sandboxDevice: device, keys: keys, activation: try reply.decode(ActivationResponse.self))
    }

    /// A browser: its sandbox device (the endpoint), its subscription's private key and auth
    /// secret (which only it holds), and what activation gave it.
    struct Browser: Sendable {
        var phone: Phone
        var privateKey: P256.KeyAgreement.PrivateKey
        var auth: [UInt8]

        var endpoint: String { phone.messagingToken }

        /// Decrypts a body the push service received, as the browser does (RFC 8291).
        func decrypt(_ base64: String) throws -> [String: String] {
            let body = try #require(Data(base64Encoded: base64))
            let plaintext = try WebPushEncryption.decrypt(Array(body), privateKey: privateKey, auth: auth)
            return try #require(DataFields.fields(String(decoding: plaintext, as: UTF8.self)))
        }
    }

    /// Registers a browser with the sandbox (subscribed with the app's application server key,
    /// asked of the relay) and activates it for `user` with its subscription.
    func browser(user: String, bundleID: String = RelayHarness.bundleID) async throws -> Browser {
        let app = try await call(.GET, "/v1/apps/\(bundleID)/web-push").decode(WebPushAppView.self)
        let device = try core.registerDevice(
            bundleID: bundleID,
            platform: .web,
            applicationServerKey: app.applicationServerKey
        )
        let privateKey = P256.KeyAgreement.PrivateKey()
        var auth = [UInt8](repeating: 0, count: 16)
        for index in auth.indices { auth[index] = UInt8.random(in: 0...255) }
        let keys = KeyPair.generate()
        var request = ActivationRequest(
            userID: user,
            app: bundleID,
            platform: .web,
            publicKey: keys.publicKey.base64,
            messagingToken: nil,
            voipToken: nil
        )
        request.subscription = WebPushSubscriptionBody(
            endpoint: try #require(device.messagingToken),
            keys: .init(
                p256dh: Base64URL.encode(Array(privateKey.publicKey.x963Representation)),
                auth: Base64URL.encode(auth)
            )
        )
        let reply = try await call(.POST, "/v1/activations", json: request)
        try #require(reply.status == 201, "activation answered \(reply.status): \(reply.text)")
        let phone = Phone(sandboxDevice: device, keys: keys, activation: try reply.decode(ActivationResponse.self))
        return Browser(phone: phone, privateKey: privateKey, auth: auth)
    }

    /// Web Push requests the sandbox's push service accepted for an endpoint.
    func acceptedWebPush(endpoint: String) -> [SandboxWebPushInspectionRecord] {
        core.webPushInspection(endpoint: endpoint).filter { $0.status == 201 }
    }

    /// Push Kit data messages the sandbox accepted for a token, each one's data.
    func acceptedHMS(token: String) -> [(SandboxHMSInspectionRecord, [String: String])] {
        core.hmsInspection(token: token).filter { $0.kind == .send && $0.status == 200 }.compactMap { record in
            record.data.flatMap(DataFields.fields).map { (record, $0) }
        }
    }

    /// FCM messages the sandbox accepted for a token.
    func acceptedFCM(token: String) -> [SandboxFCMInspectionRecord] {
        core.fcmInspection(token: token).filter { $0.kind == .send && $0.status == 200 }
    }

    // MARK: Waiting

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

    /// The harness app's webhook events of one ordering key (`push:<id>`, `device:<id>`), oldest
    /// first, whatever their delivery state.
    func events(orderingKey: String) async throws -> [WebhookEvent] {
        try await store.webhookEvents(app: RelayHarness.bundleID, state: nil, limit: 500, after: nil)
            .map(\.event)
            .filter { $0.orderingKey == orderingKey }
    }
}

enum HarnessError: Error {
    case timeout(String)
}
