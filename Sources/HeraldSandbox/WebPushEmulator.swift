import Foundation
import HeraldEncoding
import HeraldPush
import HeraldWebPushCore
import Synchronization

/// One push request as the Web Push listener read it.
struct SandboxWebPushRequest: Sendable {
    /// The subscription id of the path, `/wp/{id}`.
    var subscriptionID: String
    /// The headers the rules read, by lowercase name: `authorization`, `ttl`, `urgency`, `topic`,
    /// `content-encoding`, `content-length`.
    var headers: [String: String]
    /// The body; nil when it was larger than a push service takes (4,096 bytes).
    var body: [UInt8]?

    /// The header names the rules read.
    static let headerNames = ["authorization", "ttl", "urgency", "topic", "content-encoding", "content-length"]

    var authorization: String? { headers["authorization"] }
    var ttl: String? { headers["ttl"] }
    var urgency: String? { headers["urgency"] }
    var topic: String? { headers["topic"] }
    var contentEncoding: String? { headers["content-encoding"] }
}

/// An answer of the Web Push listener, as the emulator decides it: the transport only writes it.
struct SandboxWebPushAnswer: Sendable {
    var status: Int
    /// A JSON error body (Mozilla autopush's shape), empty on success.
    var body = Data()
    /// `Location`: the message's URL, on success.
    var location: String?
    /// `TTL`: the TTL the service keeps the message for, on success (RFC 8030 §5.2).
    var ttl: Int?
    /// Seconds for a `Retry-After` header.
    var retryAfter: Int?
    /// Latency to add before answering.
    var delay: Duration = .zero
}

/// A Web Push service (RFC 8030, RFC 8292): push requests to the subscriptions the registry
/// minted for emulated browsers, VAPID checks, Web Push faults and latency. Subscriptions and
/// browsers are the registry's: the emulator asks it whether a subscription is live and hands
/// it accepted messages.
final class WebPushEmulator: FaultPlanning {
    /// The largest body taken (RFC 8030 §7.2).
    static let maximumBody = WebPushEncryption.maxBody

    private let devices: any WebPushDeviceDirectory
    /// The listener's outage, when one runs (the transport honours it).
    let outage = WebPushOutage()
    /// Where every push request is recorded.
    let log: InspectionLog<SandboxWebPushInspectionRecord>
    private let clock: SandboxClock
    private let state: Mutex<State>

    /// Over `devices`, recording into `log`; endpoints are minted under the configured port
    /// until the listener says which it bound (`listening(port:)`).
    init(
        configuration: SandboxConfiguration,
        devices: any WebPushDeviceDirectory,
        log: InspectionLog<SandboxWebPushInspectionRecord>
    ) {
        self.devices = devices
        self.log = log
        clock = configuration.clock
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        state = Mutex(State(host: host, port: configuration.resolvedWebPushPort))
    }

    /// `https://<host>:<port>`: where the subscriptions' endpoints point.
    var endpointBase: String { state.withLock { $0.base } }

    /// The listener is bound to `port`: endpoints minted from now on use it.
    func listening(port: Int) {
        state.withLock { $0.port = port }
    }

    /// Queues a fault for the next matching push requests.
    func inject(_ fault: SandboxWebPushFault) throws(SandboxError) {
        try checkFault(count: fault.count, status: fault.status, retryAfter: fault.retryAfter)
        state.withLock { $0.plan.faults.append(fault) }
    }

    func changePlan(_ change: (inout FaultPlan<SandboxWebPushFault>) -> Void) {
        state.withLock { change(&$0.plan) }
    }

    /// `POST /wp/{id}`: applies the push service's rules to one request, records it, and hands
    /// an accepted message to the registry.
    func receive(_ request: SandboxWebPushRequest) -> SandboxWebPushAnswer {
        let now = clock.epochMilliseconds
        var record = SandboxWebPushInspectionRecord(endpointID: request.subscriptionID, receivedAt: now)
        for name in ["ttl", "urgency", "topic", "content-encoding"] { record.headers[name] = request.headers[name] }
        record.bodySize = request.body?.count ?? request.headers["content-length"].flatMap { Int($0) }
        record.body = request.body.map { Data($0).base64EncodedString() }
        let (base, latency, shuttingDown) = state.withLock { ($0.base, $0.plan.latency, $0.plan.shuttingDown) }
        var handoff = DeviceHandoff.none
        var answer: SandboxWebPushAnswer
        do throws(Refusal) {
            if shuttingDown { throw Refusal(503, "The push service is shutting down.") }
            guard let subscription = devices.webSubscription(id: request.subscriptionID) else {
                throw Refusal(404, "No such subscription.")
            }
            let claims = try Self.authorize(request.authorization, base: base, now: now / 1000)
            record.vapid = .init(
                k: Base64URL.encode(claims.key),
                aud: claims.aud,
                exp: claims.exp,
                sub: claims.sub,
                t: claims.token
            )
            guard claims.key == subscription.applicationServerKey else {
                throw Refusal(403, "The VAPID key is not the application server key the subscription was made with.")
            }
            // Injected faults hit authorized requests, as a service's own failures do.
            if let fault = state.withLock({ $0.plan.take { $0.matches(subscriptionID: request.subscriptionID) } }) {
                var refusal = Refusal(fault.status, "Injected by the sandbox.")
                refusal.retryAfter = fault.retryAfter
                refusal.outcome = "injected"
                throw refusal
            }
            let message = try Self.message(of: request, endpoint: subscription.endpoint, now: now)
            guard subscription.state == .active else { throw Refusal.gone }
            let keepUntil = message.ttl == 0 ? nil : now + Int64(message.ttl) * 1000
            let delivery: DeviceDelivery
            (delivery, handoff) = devices.deliver(message, subscriptionID: request.subscriptionID, keepUntil: keepUntil)
            switch delivery {
            case .delivered: record.delivery = "delivered"
            case .stored: record.delivery = "stored"
            case .notKept: record.delivery = "discarded: browser offline and TTL is 0"
            case .refused: throw Refusal.gone
            }
            record.status = 201
            record.outcome = "accepted"
            record.location = base + "/m/" + message.id
            answer = SandboxWebPushAnswer(status: 201, location: record.location, ttl: message.ttl)
        } catch {
            record.status = error.status
            record.outcome = error.outcome
            record.error = error.message
            answer = error.answer
        }
        answer.delay = latency
        log.append(record)
        // After the record: whoever sees the message on the browser also finds it in the log.
        handoff.complete()
        return answer
    }

    /// The VAPID checks but the key's: a token whose signature verifies, for this service (401
    /// otherwise).
    private static func authorize(
        _ authorization: String?,
        base: String,
        now: Int64
    ) throws(Refusal) -> VAPIDClaims {
        guard let authorization else { throw Refusal(401, "Missing VAPID authorization (vapid t=…, k=…).") }
        let claims: VAPIDClaims
        do {
            claims = try VAPIDVerifier.verify(
                authorization: authorization,
                endpointOrigin: WebPushOrigin.of(base) ?? base,
                now: now,
                expectedKey: nil
            )
        } catch {
            throw Refusal(401, "Invalid VAPID authorization: \(error.message).")
        }
        return claims
    }

    /// The message of a request whose headers and body pass the RFC 8030 and RFC 8291 checks
    /// (400 for a header, 413 for a body over 4,096 bytes).
    private static func message(
        of request: SandboxWebPushRequest,
        endpoint: String,
        now: Int64
    ) throws(Refusal) -> SandboxWebPushMessage {
        guard let text = request.ttl else { throw Refusal(400, "Missing TTL header.") }
        guard let ttl = WebPushRequest.ttl(header: text) else {
            throw Refusal(400, "Invalid TTL header: a whole number of seconds, 0 or more.")
        }
        var urgency = WebPushUrgency.normal
        if let value = request.urgency {
            guard let parsed = WebPushUrgency(rawValue: value.lowercased()) else {
                throw Refusal(400, "Invalid Urgency header: very-low, low, normal or high.")
            }
            urgency = parsed
        }
        if let topic = request.topic, !WebPushRequest.isValidTopic(topic) {
            throw Refusal(400, "Invalid Topic header: at most 32 characters of the URL-safe base64 alphabet.")
        }
        guard let body = request.body else {
            throw Refusal(413, "Body too large: a push service takes at most \(maximumBody) bytes.")
        }
        if !body.isEmpty {
            guard request.contentEncoding?.lowercased() == "aes128gcm" else {
                throw Refusal(400, "Unsupported Content-Encoding: a body must be aes128gcm (RFC 8291).")
            }
            guard body.count > WebPushEncryption.headerLength + WebPushEncryption.tagLength, body[20] == 65 else {
                throw Refusal(400, "Invalid aes128gcm body: no 86-byte header with a 65-byte key id.")
            }
        }
        return SandboxWebPushMessage(
            id: RandomText.urlSafe(count: 22),
            endpoint: endpoint,
            body: Data(body).base64EncodedString(),
            ttl: min(ttl, WebPushRequest.maxTTL),
            urgency: urgency,
            topic: request.topic,
            sentAt: now
        )
    }

    /// A refusal: its status, its words, and how the inspection log names it.
    private struct Refusal: Error {
        var status: Int
        var message: String
        var retryAfter: Int?
        var outcome = "rejected"

        init(_ status: Int, _ message: String) {
            self.status = status
            self.message = message
        }

        static let gone = Refusal(410, "The subscription has unsubscribed or expired.")

        /// The JSON error body autopush answers: `{"code", "error", "message"}`.
        var answer: SandboxWebPushAnswer {
            let body = ErrorBody(code: status, error: HTTPReason.phrase(status), message: message)
            let data = (try? SandboxFCMAnswer.encoder.encode(body)) ?? Data("{}".utf8)
            return SandboxWebPushAnswer(status: status, body: data, retryAfter: retryAfter)
        }
    }

    private struct ErrorBody: Encodable {
        var code: Int
        var error: String
        var message: String
    }

    struct State {
        var plan = FaultPlan<SandboxWebPushFault>()
        let host: String
        var port: Int
        var base: String { "https://\(host):\(port)" }
    }
}

/// Reason phrases of the statuses the Web Push listener answers.
enum HTTPReason {
    static func phrase(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 410: "Gone"
        case 413: "Payload Too Large"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        default: status < 500 ? "Client Error" : "Server Error"
        }
    }
}
