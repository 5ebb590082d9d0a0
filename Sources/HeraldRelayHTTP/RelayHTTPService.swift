import Foundation
public import HeraldAdapters
public import HeraldDomain
import HeraldEncoding
import HeraldHTTPSupport
import HeraldObservability
import HeraldPush
public import HeraldRelay
import HeraldRelayAPI
import HeraldStore
public import Hummingbird
import HummingbirdWebSocket
public import Logging
import Metrics
import NIOCore
public import Prometheus

/// Settings of the relay's HTTP API.
public struct RelayHTTPConfiguration: Sendable {
    /// The bearer secret of backend endpoints (messages, calls, apps, push status, activation).
    public var apiKey: String {
        didSet { apiKeyBytes = Array(apiKey.utf8) }
    }
    /// Keys still accepted while backends move to `apiKey` (a rotation); each use is counted
    /// (`herald_api_key_previous_requests_total`), so the operator sees when none is left.
    public var previousAPIKeys: [String] = [] {
        didSet { previousAPIKeyBytes = previousAPIKeys.map { Array($0.utf8) } }
    }
    /// The largest request body accepted, in bytes.
    public var maximumBodyBytes: Int = 256 * 1024
    private(set) var apiKeyBytes: [UInt8]
    private(set) var previousAPIKeyBytes: [[UInt8]] = []

    public init(apiKey: String) {
        self.apiKey = apiKey
        apiKeyBytes = Array(apiKey.utf8)
    }

    /// Which key `token` is, compared in constant time with each (every key is compared, so the
    /// time does not tell which one matched).
    func apiKeyMatch(_ token: [UInt8]) -> APIKeyMatch {
        var previous = false
        for key in previousAPIKeyBytes where ConstantTime.equal(token, key) { previous = true }
        if ConstantTime.equal(token, apiKeyBytes) { return .current }
        return previous ? .previous : .none
    }

    enum APIKeyMatch {
        case current
        case previous
        case none
    }
}

/// The relay's HTTP API: JSON under `/v1`, `/health`, `/health/live`, `/health/ready` and
/// `/metrics` (docs/openapi.yaml).
///
/// Backend endpoints take the API key, device endpoints the device's own credential, both as
/// `authorization: Bearer <secret>`. Every refusal is a JSON body `{"error", "reason", "field"?}`:
/// routes throw `RelayError`, which is its own answer, and `JSONErrorMiddleware` answers the rest.
public enum RelayHTTPService {
    /// The routes.
    ///
    /// - Parameters:
    ///   - registry: where `/metrics` reads from; `nil` leaves `/metrics` out.
    ///   - health: extra facts for `/health` (say, the dispatcher's load).
    ///   - adapters: contact-center webhooks, served at `POST /v1/adapters/{name}`.
    ///   - accessLogger: where the access log goes, one line per request at info.
    ///   - ready: what else `/health/ready` checks besides the store (the remote provider), as
    ///     the reasons the relay cannot serve now; empty when it can.
    ///   - clock: the clock the oldest queued push's age is measured with.
    public static func router(
        relay: Relay,
        configuration: RelayHTTPConfiguration,
        registry: PrometheusCollectorRegistry? = nil,
        adapters: [any ContactCenterAdapter] = [],
        accessLogger: Logger? = nil,
        health: @escaping @Sendable () async -> [String: Int] = { [:] },
        ready: @escaping @Sendable () async -> [String] = { [] },
        clock: any HeraldClock = WallClock()
    ) -> Router<RelayRequestContext> {
        let router = Router(context: RelayRequestContext.self)
        // First, so it sees every route and the final status, JSON errors included.
        router.add(middleware: HTTPObservabilityMiddleware(logger: accessLogger ?? relay.logger))
        router.add(middleware: JSONErrorMiddleware(.herald(internalReason: "the relay failed"), logger: relay.logger))
        let api = API(relay: relay, configuration: configuration)

        // The banner's URL: what is here and where its description is, so opening it in a
        // browser or with curl answers something useful instead of 404.
        router.get("/v1") { _, _ -> Response in
            try JSONResponse.make(.ok, ServiceIndex.relay)
        }

        router.get("/health") { _, _ -> Response in
            var body: [String: Int] = [:]
            do {
                let counts = try await relay.ingest.counts()
                for state in PushState.allCases { body["outbox_" + state.rawValue] = counts.outbox[state] }
                body["devices"] = counts.devices
            } catch {
                return try JSONResponse.make(.serviceUnavailable, ["status": "store unavailable"])
            }
            for (key, value) in await health() { body[key] = value }
            return try JSONResponse.make(.ok, HealthView(status: "ok", counts: body))
        }
        HTTPObservability.addHealth(to: router) {
            let store = await HTTPObservability.check("store") { _ = try await relay.ingest.counts() }
            return (store.map { [$0] } ?? []) + (await ready())
        }
        if let registry {
            let queue = QueueGauges()
            HTTPObservability.addMetrics(to: router, exposition: MetricsExposition(registry: registry)) {
                await queue.refresh(relay: relay, now: clock.now())
            }
        }

        let v1 = router.group("v1")
        // Each group checks its credential before a handler runs (`RelayAuthMiddleware`).
        let sending = api.routes(v1, .backend(.send))
        let reading = api.routes(v1, .backend(.read))
        let devices = api.routes(v1, .device)
        let pathDevices = api.routes(v1, .pathDevice)
        DeviceRoutes.add(to: v1, relay: relay, api: api)
        sending.post("messages") { request, context -> Response in
            let caller = try context.caller
            let body = try await api.decode(MessageRequest.self, request)
            try await relay.admit(caller, messages: 1)
            let receipt = context.accessLog.name(
                try await api.traced("/v1/messages", request) {
                    try await relay.ingest.send(message: body, app: caller.appID)
                },
                as: "message"
            )
            return JSONResponse.text(.accepted, receipt.jsonText)
        }
        devices.get("messages/:id") { _, context -> Response in
            let id = try context.parameters.require("id")
            return try JSONResponse.make(.ok, try await relay.ingest.message(id: id, for: try context.device))
        }
        sending.post("calls") { request, context -> Response in
            let caller = try context.caller
            let body = try await api.decode(CallRequest.self, request)
            let receipt = context.accessLog.name(
                try await api.traced("/v1/calls", request) {
                    try await relay.ingest.send(call: body, app: caller.appID)
                },
                as: "call"
            )
            return JSONResponse.text(.accepted, receipt.jsonText)
        }
        let webhooks = AdapterWebhooks(adapters: adapters, relay: relay, api: api)
        v1.post("adapters/:name") { request, context -> Response in
            try await webhooks.handle(request, name: try context.parameters.require("name"))
        }
        sending.post("broadcasts") { request, context -> Response in
            let caller = try context.caller
            let body = try await api.decode(BroadcastRequest.self, request)
            try await relay.admit(caller, messages: Set(body.to).count)
            return try JSONResponse.make(
                .accepted,
                context.accessLog.name(
                    try await api.traced("/v1/broadcasts", request) {
                        try await relay.ingest.broadcast(body, app: caller.appID)
                    }
                )
            )
        }
        LiveChannelRoute.add(to: router, relay: relay, api: api)
        // A conversation's transcript spans apps: an app key is 403 here, saying what it tried.
        let chatEvents = api.routes(v1, .admin(.send, what: "a chat event (a conversation's transcript spans apps)"))
        chatEvents.post("chats/:conversation/events") { request, context -> Response in
            let conversation = try context.parameters.require("conversation")
            let body = try await api.decode(ChatEventRequest.self, request)
            return try JSONResponse.make(
                .accepted,
                try await relay.transcripts.chatEvent(conversation: conversation, body)
            )
        }
        let chatEnds = api.routes(v1, .admin(.send, what: "ending a chat (a conversation's transcript spans apps)"))
        chatEnds.post("chats/:conversation/end") { _, context -> Response in
            let conversation = try context.parameters.require("conversation")
            return try JSONResponse.make(.ok, try await relay.transcripts.endChat(conversation: conversation))
        }
        devices.get("chats/:conversation/transcript") { request, context -> Response in
            let conversation = try context.parameters.require("conversation")
            let device = try context.device
            let after = request.uri.queryParameters.get("after") ?? "0"
            guard let position = Int(after), position >= 0 else {
                throw RelayError.invalidField("after", "must be a transcript position (0 or more)")
            }
            return try JSONResponse.make(
                .ok,
                try await relay.transcripts.transcript(conversation: conversation, after: position, for: device)
            )
        }
        pathDevices.post("devices/:id/chats/:conversation/disconnect") { request, context -> Response in
            let conversation = try context.parameters.require("conversation")
            let device = try context.device
            let body = try await api.decode(ChatDisconnectRequest.self, request)
            try await relay.transcripts.chatDisconnect(device: device, conversation: conversation, body)
            return try JSONResponse.make(
                .ok,
                DisconnectAnswer(conversation: conversation, transcriptPosition: body.transcriptPosition)
            )
        }
        pathDevices.post("devices/:id/chats/:conversation/connect") { _, context -> Response in
            let conversation = try context.parameters.require("conversation")
            let device = try context.device
            return try JSONResponse.make(
                .ok,
                try await relay.transcripts.chatConnect(device: device, conversation: conversation)
            )
        }
        reading.get("pushes/:id") { _, context -> Response in
            let caller = try context.caller
            let id = try context.parameters.require("id")
            let status = try await relay.ingest.pushStatus(id: id)
            if caller.appID != nil {
                try API.visible(caller, app: try await relay.activation.deviceApp(id: status.deviceID) ?? "")
            }
            return try JSONResponse.make(.ok, status)
        }
        ListRoutes.add(to: v1, relay: relay, api: api)
        WebhookRoutes.add(to: v1, relay: relay, api: api)
        CallRoutes.add(to: v1, relay: relay, api: api)
        CallbackRoutes.add(to: v1, relay: relay, api: api)
        AuditRoutes.add(to: v1, relay: relay, api: api)
        return router
    }
}

/// What `GET /v1` answers.
struct ServiceIndex: Encodable {
    var service: String
    var api: String
    var documentation: String
    var health: String
    var live: String
    var ready: String
    var metrics: String

    static let relay = ServiceIndex(
        service: "herald relay",
        api: "/v1",
        documentation: "docs/openapi.yaml in the Herald repository",
        health: "/health",
        live: "/health/live",
        ready: "/health/ready",
        metrics: "/metrics"
    )
}

/// The outbox as the store has it, read at scrape time (so every node on a shared store shows
/// the same queue): made with the router, so in tests they land in the relay's own registry.
struct QueueGauges: Sendable {
    private let depth = Metrics.Gauge(label: "herald_relay_queue_depth")
    private let sending = Metrics.Gauge(label: "herald_relay_pushes_sending")
    private let oldestAge = Metrics.Gauge(label: "herald_relay_oldest_queued_push_age_seconds")
    private let storeUp = Metrics.Gauge(label: "herald_relay_store_up")

    func refresh(relay: Relay, now: Int64) async {
        guard let counts = try? await relay.ingest.counts().outbox else {
            // The last values stay: they were true when last read; `store_up` says they are old.
            storeUp.record(0)
            return
        }
        storeUp.record(1)
        depth.record(counts[.queued])
        sending.record(counts[.sending])
        oldestAge.record(Double(max(0, now - (counts.oldestQueuedAt ?? now))) / 1000)
    }
}

struct HealthView: Encodable {
    var status: String
    var counts: [String: Int]

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: DynamicKey.self)
        try container.encode(status, forKey: DynamicKey("status"))
        for (key, value) in counts.sorted(by: { $0.key < $1.key }) {
            try container.encode(value, forKey: DynamicKey(key))
        }
    }
}

struct DynamicKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// The answer to a chat disconnect.
struct DisconnectAnswer: Encodable {
    var conversation: String
    var transcriptPosition: Int

    enum CodingKeys: String, CodingKey {
        case conversation
        case transcriptPosition = "transcript_position"
    }
}
