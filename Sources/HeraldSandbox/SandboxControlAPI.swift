import Foundation
import HeraldAPNsCore
import HeraldHTTPSupport
import HeraldObservability
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore

/// The sandbox's control and device API over HTTP/1.1 and WebSocket (docs/sandbox.md): apps,
/// keys, service accounts, devices and their tokens, device connections, faults and inspection.
enum SandboxControlAPI {
    typealias Context = BasicWebSocketRequestContext

    /// `?token=…&limit=…` of an inspection request.
    static func inspectionFilter(_ request: Request) throws -> (token: String?, limit: Int?) {
        var limit: Int?
        if let text = request.uri.queryParameters["limit"] {
            guard let value = Int(String(text)), value >= 0 else {
                throw SandboxError.invalidRequest("limit must be a whole number, 0 or more")
            }
            limit = value
        }
        return (request.uri.queryParameters["token"].map { String($0) }, limit)
    }

    static func router(core: SandboxCore, apns: SandboxAPNsServer, logger: Logger) -> Router<Context> {
        let router = Router(context: Context.self)
        // First, so it sees every route and the final status.
        router.middlewares.add(HTTPObservabilityMiddleware(logger: logger))
        router.middlewares.add(JSONErrorMiddleware(ControlErrorBody.style))
        HTTPObservability.addHealth(to: router) { [] }
        if let registry = core.configuration.metrics {
            HTTPObservability.addMetrics(to: router, exposition: MetricsExposition(registry: registry))
        }

        // The banner's URL: what the control API offers, so opening it answers something useful.
        router.get("/sandbox") { _, _ in JSON(Index.control) }

        router.get("/sandbox/health") { _, _ in
            JSON(Status(status: "ok", apnsConnections: apns.connectionCount))
        }

        router.get("/sandbox/apps") { _, _ in JSON(AppList(apps: core.apps)) }
        router.post("/sandbox/apps") { request, context -> JSON<SandboxApp> in
            let app = try await request.decodeJSON(as: SandboxApp.self, context: context)
            try core.register(app: app)
            return JSON(app, status: .created)
        }

        router.post("/sandbox/keys") { request, context -> HTTPResponse.Status in
            let key = try await request.decodeJSON(as: SandboxKey.self, context: context)
            try core.register(key: key)
            return .created
        }
        router.post("/sandbox/keys/:keyID/revoke") { _, context -> HTTPResponse.Status in
            try core.revoke(keyID: try context.parameters.require("keyID"))
            return .noContent
        }

        router.post("/sandbox/certificates") { request, context -> JSON<SandboxCertificateAuthority.ClientIdentity> in
            let body = try await request.decodeJSON(as: CertificateRequest.self, context: context)
            guard core.apps.contains(where: { $0.bundleID == body.bundleID }) else {
                throw SandboxError.unknownApp(body.bundleID)
            }
            let identity = try SandboxCertificateAuthority.issueClientCertificate(
                bundleID: body.bundleID,
                environment: body.environment ?? .sandbox,
                tls: core.configuration.tls
            )
            return JSON(identity, status: .created)
        }

        router.post("/sandbox/devices") { request, context -> JSON<SandboxDevice> in
            let registration = try await request.decodeJSON(as: DeviceRegistration.self, context: context)
            let device = try core.registerDevice(
                bundleID: registration.bundleID,
                messagingTokenDelay: .milliseconds(
                    try registration.delay(\.messagingTokenDelayMs, "messaging_token_delay_ms")
                ),
                voipTokenDelay: .milliseconds(try registration.delay(\.voipTokenDelayMs, "voip_token_delay_ms")),
                platform: registration.platform ?? .ios,
                projectID: registration.projectID,
                apnsEnvironment: registration.apnsEnvironment,
                applicationServerKey: registration.applicationServerKey
            )
            return JSON(device, status: .created)
        }
        router.get("/sandbox/devices/:deviceID") { _, context in
            JSON(try core.device(id: try context.parameters.require("deviceID")))
        }
        router.post("/sandbox/devices/:deviceID/uninstall") { _, context -> HTTPResponse.Status in
            try core.uninstall(deviceID: try context.parameters.require("deviceID"))
            return .noContent
        }
        router.post("/sandbox/tokens/:token/expire") { _, context -> HTTPResponse.Status in
            try core.expire(token: try context.parameters.require("token"))
            return .noContent
        }
        router.ws("/sandbox/devices/:deviceID/connect") { _, context in
            // Refuse before upgrading, so a wrong id is a 404 and not a socket that closes.
            try core.checkConnectable(deviceID: try context.parameters.require("deviceID"))
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            let deviceID = try context.requestContext.parameters.require("deviceID")
            let events = try core.connect(deviceID: deviceID)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await _ in inbound {}
                }
                group.addTask {
                    for await event in events {
                        let text = String(decoding: try encoder.encode(event), as: UTF8.self)
                        try await outbound.write(.text(text))
                    }
                }
                // Whichever ends first (the device hangs up, or the sandbox ends the connection
                // because the app was uninstalled or replaced) ends the other.
                try await group.next()
                group.cancelAll()
            }
        }

        router.post("/sandbox/faults") { request, context -> JSON<SandboxFault> in
            let fault = try await request.decodeJSON(as: SandboxFault.self, context: context)
            try core.inject(fault)
            return JSON(fault, status: .created)
        }
        router.delete("/sandbox/faults") { _, _ -> HTTPResponse.Status in
            core.clearFaults()
            apns.endOutage()
            core.webPush.outage.end()
            return .noContent
        }
        router.post("/sandbox/faults/outage") { request, context -> JSON<OutageAnswer> in
            let outage = try await request.decodeJSON(as: Latency.self, context: context)
            guard (1...600_000).contains(outage.ms) else {
                throw SandboxError.invalidRequest("ms must be between 1 and 600000")
            }
            let until = core.configuration.clock.epochMilliseconds + Int64(outage.ms)
            apns.beUnreachable(for: .milliseconds(Int64(outage.ms)))
            core.webPush.outage.begin(for: .milliseconds(outage.ms))
            return JSON(OutageAnswer(ms: outage.ms, until: until), status: .created)
        }
        router.put("/sandbox/faults/latency") { request, context -> HTTPResponse.Status in
            let latency = try await request.decodeJSON(as: Latency.self, context: context)
            guard (0...600_000).contains(latency.ms) else {
                throw SandboxError.invalidRequest("ms must be between 0 and 600000")
            }
            core.setLatency(.milliseconds(latency.ms))
            return .noContent
        }
        router.post("/sandbox/connections/goaway") { request, context -> HTTPResponse.Status in
            let body = try await request.decodeJSONIfPresent(as: GoAway.self, context: context)
            if let next = body?.next {
                guard (0...1000).contains(next) else {
                    throw SandboxError.invalidRequest("next must be between 0 and 1000")
                }
                apns.goAwayNewConnections(next)
            }
            apns.goAwayAll(reason: body?.reason)
            return .noContent
        }
        router.post("/sandbox/connections/drop") { _, _ -> HTTPResponse.Status in
            apns.dropAll()
            return .noContent
        }

        router.get("/sandbox/apns/provider-tokens") { _, _ in
            JSON(ProviderTokenCounts(keys: core.providerTokenCounts))
        }

        router.get("/sandbox/inspection") { request, _ in
            let (token, limit) = try inspectionFilter(request)
            return JSON(Inspection(records: core.inspection(token: token, limit: limit)))
        }
        router.delete("/sandbox/inspection") { _, _ -> HTTPResponse.Status in
            core.clearInspection()
            return .noContent
        }
        addFCMRoutes(to: router, core: core)
        addHMSRoutes(to: router, core: core)
        addWebPushRoutes(to: router, core: core)
        return router
    }

    struct Status: Encodable {
        let status: String
        let apnsConnections: Int

        enum CodingKeys: String, CodingKey {
            case status
            case apnsConnections = "apns_connections"
        }
    }

    struct ProviderTokenCounts: Encodable {
        let keys: [SandboxProviderTokenCount]
    }

    struct AppList: Encodable {
        let apps: [SandboxApp]
    }

    struct Inspection: Encodable {
        let records: [SandboxInspectionRecord]
    }

    struct DeviceRegistration: Decodable {
        let bundleID: String
        let messagingTokenDelayMs: Int?
        let voipTokenDelayMs: Int?
        let platform: SandboxPlatform?
        let projectID: String?
        /// iOS: the environment the device's tokens belong to (development by default).
        let apnsEnvironment: APNsEnvironment?
        /// Web: the app's VAPID public key (base64url) the browser subscribes with.
        let applicationServerKey: String?

        enum CodingKeys: String, CodingKey {
            case apnsEnvironment = "apns_environment"
            case applicationServerKey = "application_server_key"
            case bundleID = "bundle_id"
            case messagingTokenDelayMs = "messaging_token_delay_ms"
            case voipTokenDelayMs = "voip_token_delay_ms"
            case platform
            case projectID = "project_id"
        }

        func delay(_ field: KeyPath<Self, Int?>, _ name: String) throws -> Int {
            let value = self[keyPath: field] ?? 0
            guard (0...3_600_000).contains(value) else {
                throw SandboxError.invalidRequest("\(name) must be between 0 and 3600000")
            }
            return value
        }
    }

    struct CertificateRequest: Decodable {
        let bundleID: String
        let environment: SandboxKey.Environment?

        enum CodingKeys: String, CodingKey {
            case bundleID = "bundle_id"
            case environment
        }
    }

    struct Latency: Decodable {
        let ms: Int
    }

    struct OutageAnswer: Encodable {
        let ms: Int
        /// When the outage ends, in milliseconds since the epoch.
        let until: Int64
    }

    /// What `GET /sandbox` answers: the control API's routes, each described in docs/sandbox.md.
    struct Index: Encodable {
        let service: String
        let documentation: String
        let routes: [String]

        static let control = Index(
            service: "herald sandbox control API",
            documentation: "docs/sandbox.md in the Herald repository",
            routes: [
                "GET /sandbox/health", "GET /sandbox/apps", "POST /sandbox/apps", "POST /sandbox/keys",
                "POST /sandbox/keys/{keyID}/revoke", "POST /sandbox/certificates", "POST /sandbox/devices",
                "GET /sandbox/devices/{deviceID}", "POST /sandbox/devices/{deviceID}/uninstall",
                "GET /sandbox/devices/{deviceID}/connect", "POST /sandbox/tokens/{token}/expire",
                "POST /sandbox/faults", "DELETE /sandbox/faults", "PUT /sandbox/faults/latency",
                "POST /sandbox/faults/outage", "POST /sandbox/connections/goaway", "POST /sandbox/connections/drop",
                "GET /sandbox/inspection", "DELETE /sandbox/inspection", "GET /sandbox/apns/provider-tokens",
                "POST /sandbox/webpush/faults", "GET /sandbox/webpush/inspection", "DELETE /sandbox/webpush/inspection",
            ]
        )
    }

    struct GoAway: Decodable {
        let reason: APNsReason?
        /// How many of the next connections also get GOAWAY as soon as they open.
        let next: Int?
    }
}

/// Any Codable value as a JSON response.
struct JSON<Value: Encodable>: ResponseGenerator {
    var status: HTTPResponse.Status = .ok
    let value: Value

    init(_ value: Value, status: HTTPResponse.Status = .ok) {
        self.value = value
        self.status = status
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        try JSONResponse.make(status, value)
    }
}

extension Request {
    /// Decodes a JSON body, turning every failure into a 400 that names what is wrong.
    func decodeJSON<T: Decodable>(as type: T.Type, context: some RequestContext) async throws -> T {
        let buffer = try await body.collect(upTo: 64 * 1024)
        guard buffer.readableBytes > 0 else { throw SandboxError.invalidRequest("the request needs a JSON body") }
        return try Self.decode(type, from: buffer)
    }

    /// Like `decodeJSON`, but an empty body is nil.
    func decodeJSONIfPresent<T: Decodable>(as type: T.Type, context: some RequestContext) async throws -> T? {
        let buffer = try await body.collect(upTo: 64 * 1024)
        guard buffer.readableBytes > 0 else { return nil }
        return try Self.decode(type, from: buffer)
    }

    private static func decode<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer) throws -> T {
        do throws(JSONBodyError) {
            return try JSONBody.decode(type, from: Array(buffer.readableBytesView))
        } catch {
            throw SandboxError.invalidRequest(error.description)
        }
    }
}
