import Foundation
public import HeraldAPNs
import HeraldAPNsCore
import HeraldEncoding
import HeraldHTTPSupport
import HeraldObservability
public import HeraldProvider
import HeraldProviderAPI
import HeraldPush
public import Hummingbird
public import Logging
import NIOCore
public import Prometheus

/// `herald provider` over HTTP: relays post batches of pushes, authenticated with a bearer
/// secret, and get each push's outcome back (APNs and FCM pushes alike). The same
/// `ProviderStage` runs in-process when the relay uses it directly.
public enum ProviderHTTPService {
    /// The most pushes in one batch.
    public static let maximumBatch = ProviderBatch.maximumCount

    /// What a batch body may hold: a request's limits, with room for `maximumBatch` pushes of
    /// about a dozen fields each.
    static let batchLimits: JSONLimits = {
        var limits = JSONLimits.request
        limits.maximumValues = 32 * maximumBatch
        return limits
    }()

    /// The routes for an APNs client alone.
    public static func router(client: APNsClient, secret: String) -> Router<BasicRequestContext> {
        router(stage: ProviderStage(apns: client), secret: secret)
    }

    /// The routes, under `/v1`, plus `/health`, `/health/live`, `/health/ready` and, with a
    /// registry, `/metrics`.
    ///
    /// - Parameters:
    ///   - registry: where `/metrics` reads from; `nil` leaves `/metrics` out.
    ///   - accessLogger: where the access log goes (one line per request at info); none when nil.
    public static func router(
        stage: ProviderStage,
        secret: String,
        registry: PrometheusCollectorRegistry? = nil,
        accessLogger: Logger? = nil
    ) -> Router<BasicRequestContext> {
        let router = Router()
        router.add(
            middleware: HTTPObservabilityMiddleware(
                logger: accessLogger
                    ?? Logger(label: "herald.access") { _ in
                        SwiftLogNoOpLogHandler()
                    }
            )
        )
        router.add(middleware: JSONErrorMiddleware(.herald(internalReason: "the provider failed")))
        // Ready when it can send anywhere: a provider with no network configured takes batches
        // only to fail them.
        HTTPObservability.addHealth(to: router) {
            stage.apns == nil && stage.fcm == nil ? ["no network configured (neither APNs nor FCM)"] : []
        }
        if let registry {
            HTTPObservability.addMetrics(to: router, exposition: MetricsExposition(registry: registry))
        }
        router.get("/health") { _, _ -> Response in
            let load = stage.apns?.load ?? (inFlight: 0, queued: 0)
            return json([
                "status": "ok", "in_flight": "\(load.inFlight)", "queued": "\(load.queued)",
                "apns": stage.apns == nil ? "off" : "on", "fcm": stage.fcm == nil ? "off" : "on",
                "webpush": stage.webPush == nil ? "off" : "on",
                "hms": stage.hmsApps.isEmpty ? "off" : "on",
            ])
        }
        router.post("/v1/push/batch") { request, context -> Response in
            guard authorized(request, secret: secret) else { throw ProviderRefusal.unauthorized }
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: 16 * 1024 * 1024)
            } catch {
                throw ProviderRefusal.tooLarge
            }
            let batch: ProviderBatch
            do throws(JSONBodyError) {
                batch = try JSONBody.decode(
                    ProviderBatch.self,
                    from: Array(body.readableBytesView),
                    limits: batchLimits
                )
            } catch {
                throw ProviderRefusal.invalidRequest(error.description)
            }
            guard !batch.pushes.isEmpty, batch.pushes.count <= maximumBatch else {
                throw ProviderRefusal.invalidRequest("a batch holds 1 to \(maximumBatch) pushes")
            }
            let results = await results(of: batch.pushes, through: stage)
            return try JSONResponse.make(.ok, ProviderBatchResult(results: results))
        }
        return router
    }

    /// Sends the batch's valid pushes through the stage, and answers the others' refusals, in order.
    static func results(of wire: [ProviderPush], through stage: ProviderStage) async -> [ProviderPushResult] {
        var results = [ProviderPushResult?](repeating: nil, count: wire.count)
        var valid: [(index: Int, push: Push)] = []
        for (index, item) in wire.enumerated() {
            switch item.push(makeAPNsID: APNsUUID.random) {
            case .success(let push):
                valid.append((index, push))
            case .failure(let refusal):
                results[index] = ProviderPushResult(
                    outcome: .failed,
                    id: item.id,
                    apnsID: item.network == .apns ? item.apnsID : nil,
                    reason: refusal.reason,
                    status: 400
                )
            }
        }
        let outcomes = await stage.send(valid.map(\.push))
        for (item, outcome) in zip(valid, outcomes) {
            results[item.index] = ProviderPushResult(push: item.push, outcome: outcome)
        }
        return results.map { $0! }
    }

    /// Whether the request carries the bearer secret (compared in constant time).
    static func authorized(_ request: Request, secret: String) -> Bool {
        Bearer.matches(request.headers[.authorization], secret: Array(secret.utf8))
    }

    static func json(_ object: [String: String], status: HTTPResponse.Status = .ok) -> Response {
        (try? JSONResponse.make(status, object)) ?? JSONResponse.text(status, "{}")
    }
}

/// Why the provider refused a batch request: the error body every Herald service answers, with
/// its status, written by `JSONErrorMiddleware` when the route throws it.
struct ProviderRefusal: JSONResponseError {
    private enum Code: String {
        case unauthorized
        case bodyTooLarge = "body_too_large"
        case invalidRequest = "invalid_request"
    }

    private let code: Code
    /// What went wrong, for the relay's operator.
    let reason: String

    private init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// No bearer secret, or another one.
    static let unauthorized = Self(
        .unauthorized,
        "a valid bearer secret is required (authorization: bearer <secret>)"
    )
    /// A body past the 16 MiB the route reads.
    static let tooLarge = Self(.bodyTooLarge, "the batch is larger than 16 MiB")
    /// A body that is no batch, or one of the wrong size.
    static func invalidRequest(_ reason: String) -> Self { Self(.invalidRequest, reason) }

    var status: HTTPResponse.Status {
        switch code {
        case .unauthorized: .unauthorized
        case .bodyTooLarge: .contentTooLarge
        case .invalidRequest: .badRequest
        }
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        JSONResponse.error(status, code.rawValue, reason: reason)
    }
}
