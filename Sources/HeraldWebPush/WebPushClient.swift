import AsyncHTTPClient
import Crypto
import Foundation
import HeraldClientSupport
public import HeraldDomain
import HeraldEncoding
public import HeraldPush
import HeraldWebPushCore
public import Logging
public import NIOCore
public import NIOPosix
import NIOSSL
public import ServiceLifecycle

/// The provider's Web Push sender (RFC 8030): each push encrypted for its subscription (RFC 8291
/// `aes128gcm`), signed for with its app's VAPID key (RFC 8292), posted to the subscription's
/// endpoint, and the push service's answer turned into a `PushOutcome`.
///
/// One attempt per send, on purpose: a push service that answers 429 or 5xx (or cannot be
/// reached) makes the push `retryLater`, and the relay backs that push off on its own, so a
/// failing push service never holds a batch that also carries APNs and FCM pushes. Nor is any
/// answer `unreachable`: endpoints belong to many push services (each browser vendor's), and
/// one that is down must not hold the others' pushes.
///
/// Run it under a `ServiceGroup` (it closes its connections on graceful shutdown), then call
/// `send(batch:)` from any task.
public final class WebPushClient: Service, Sendable {
    private let configuration: WebPushClientConfiguration
    private let http: HTTPClient
    private let logger: Logger
    private let clock: any HeraldClock
    private let metrics = PushClientMetrics(network: "webpush")
    private let alerts = RateLimitedAlerts(interval: .seconds(60))

    public init(
        configuration: WebPushClientConfiguration,
        logger: Logger,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        clock: any HeraldClock = WallClock()
    ) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let ca = configuration.caCertificatePath { tls.trustRoots = .file(ca) }
        var httpConfiguration = HTTPClient.Configuration(tlsConfiguration: tls)
        httpConfiguration.httpVersion = .automatic
        httpConfiguration.timeout = .init(connect: .seconds(10))
        httpConfiguration.connectionPool.retryConnectionEstablishment = false
        // A push service's answer is final: following a redirect would post the push elsewhere.
        httpConfiguration.redirectConfiguration = .disallow
        http = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: httpConfiguration)
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
    }

    public func run() async throws {
        try? await gracefulShutdown()
        try await http.shutdown()
    }

    /// Sends every push, at most `maximumConcurrentSends` at once; one outcome per push, in order.
    public func send(batch pushes: [(Push, WebPushPayload)]) async -> [PushOutcome] {
        var outcomes = [PushOutcome?](repeating: nil, count: pushes.count)
        await withTaskGroup(of: (Int, PushOutcome).self) { group in
            var next = 0
            let width = max(1, configuration.maximumConcurrentSends)
            while next < min(width, pushes.count) {
                let index = next
                group.addTask { (index, await self.send(pushes[index].0, pushes[index].1)) }
                next += 1
            }
            for await (index, outcome) in group {
                outcomes[index] = outcome
                if next < pushes.count {
                    let index = next
                    group.addTask { (index, await self.send(pushes[index].0, pushes[index].1)) }
                    next += 1
                }
            }
        }
        return outcomes.map { $0 ?? .retryLater(reason: "not sent") }
    }

    /// Sends one push: checks, encrypts, signs, posts, and reads the push service's answer.
    public func send(_ push: Push, _ payload: WebPushPayload) async -> PushOutcome {
        let prepared: PreparedPush
        switch prepare(push, payload) {
        case .ready(let ready): prepared = ready
        case .stopped(let outcome): return outcome
        }
        var request = HTTPClientRequest(url: push.token)
        request.method = .POST
        for (name, value) in prepared.headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: prepared.body))
        metrics.sent.increment()
        metrics.inFlight.increment()
        defer { metrics.inFlight.decrement() }
        let started = ContinuousClock.now
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await http.execute(request, timeout: TimeAmount(configuration.requestTimeout))
            body = try await response.body.collect(upTo: 64 * 1024)
        } catch {
            metrics.failed(reason: "transport")
            return .retryLater(reason: "cannot reach the push service at \(prepared.origin): \(error)")
        }
        metrics.latency.recordNanoseconds(Int64((ContinuousClock.now - started) / .nanoseconds(1)))
        let status = Int(response.status.code)
        var outcome = WebPushAnswer.outcome(
            status: status,
            retryAfter: response.headers.first(name: "retry-after"),
            body: String(buffer: body)
        )
        switch outcome {
        case .delivered:
            metrics.delivered.increment()
            outcome = .delivered(receipt: response.headers.first(name: "location"))
        case .failed(let reason, _):
            metrics.failed(reason: "\(status)")
            // Refused for good: the key, the subscription's key or what the relay sends must
            // change, so the operator hears of it (once a minute per status).
            if alerts.shouldAlert("\(status)") {
                logger.error(
                    "a Web Push service refused a push for good",
                    metadata: ["status": "\(status)", "origin": "\(prepared.origin)", "reason": "\(reason)"]
                )
            }
        case .tokenDead: metrics.failed(reason: "\(status)")
        case .retryLater, .unreachable, .expired: metrics.failed(reason: "retry-later")
        }
        return outcome
    }

    /// What goes on the wire for one push.
    private struct PreparedPush {
        var origin: String
        var headers: [(String, String)]
        var body: [UInt8]
    }

    /// A push made ready for the wire, or the outcome that stopped it before.
    private enum Preparation {
        case ready(PreparedPush)
        case stopped(PushOutcome)
    }

    /// The request of a push, or the outcome that stops it before the wire: no keys, no VAPID key
    /// for its app, a bad endpoint, an expiration passed, a plaintext too large.
    private func prepare(_ push: Push, _ payload: WebPushPayload) -> Preparation {
        guard let keys = payload.keys else {
            return .stopped(.failed(reason: "the push carries no subscription keys", status: 400))
        }
        guard let signer = configuration.signer(app: payload.app, key: payload.vapidKey) else {
            let name = payload.vapidKey ?? payload.app
            return .stopped(.failed(reason: "no VAPID key for '\(name)' (nor a default) on this provider", status: 503))
        }
        // The endpoint is checked again here: the provider may get it from a remote relay.
        guard
            (try? WebPushSubscription.checkEndpoint(push.token, allowPrivate: configuration.allowPrivateEndpoints))
                != nil, let origin = WebPushOrigin.of(push.token)
        else {
            return .stopped(
                .failed(reason: "the subscription's endpoint is not one this provider posts to", status: 400)
            )
        }
        let now = clock.seconds()
        let ttl: Int
        switch push.expiration {
        case nil: ttl = configuration.defaultTTL
        case 0?: ttl = 0  // now or never
        case let expiration?:
            guard expiration > now else { return .stopped(.expired) }
            ttl = Int(min(Int64(WebPushRequest.maxTTL), expiration - now))
        }
        do {
            let request = try WebPushRequest(ttl: ttl, urgency: payload.urgency, topic: push.collapseID.map(Self.topic))
            var headers = request.headers
            headers.append(("Authorization", try signer.authorization(for: push.token, now: now)))
            let body = try WebPushEncryption.encrypt(Array(payload.json.utf8), for: keys)
            return .ready(PreparedPush(origin: origin, headers: headers, body: body))
        } catch {
            metrics.failed(reason: "invalid")
            return .stopped(.failed(reason: error.description, status: 400))
        }
    }

    /// A collapse id as a `Topic` (RFC 8030 §5.4: at most 32 base64url characters): itself when
    /// it is one, else the first 32 characters of its SHA-256 in base64url, the same for the same
    /// id (a conversation's id is often longer or has other characters).
    static func topic(_ collapseID: String) -> String {
        if WebPushRequest.isValidTopic(collapseID) { return collapseID }
        return String(Base64URL.encode(Array(SHA256.hash(data: Array(collapseID.utf8)))).prefix(32))
    }
}
