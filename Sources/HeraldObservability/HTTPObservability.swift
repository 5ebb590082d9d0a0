import HeraldHTTPSupport
public import Hummingbird
public import Logging
import Metrics
import NIOCore
import Synchronization

/// What every Herald HTTP listener shares: request metrics and the access log (one middleware),
/// `GET /metrics`, and `GET /health/live` and `/health/ready`.
public enum HTTPObservability {
    static let requestsName = "herald_http_requests_total"
    static let durationName = "herald_http_request_duration_seconds"
    /// The route label of a request no route matched: its path could be anything, so it is not
    /// a label.
    public static let unmatchedRoute = "unmatched"

    /// Adds `GET /metrics`: `collect` runs first (to refresh gauges read at scrape time), then the
    /// registry, the build info and the process's figures are written.
    public static func addMetrics<Context: RequestContext>(
        to router: Router<Context>,
        exposition: MetricsExposition,
        collect: @escaping @Sendable () async -> Void = {}
    ) {
        router.get("/metrics") { _, _ -> Response in
            await collect()
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(
                status: .ok,
                headers: headers,
                body: .init(byteBuffer: ByteBuffer(bytes: exposition.render()))
            )
        }
    }

    /// Adds `GET /health/live` (the process answers: 200) and `GET /health/ready` (200 when
    /// `ready` finds nothing wrong; 503 with its reasons otherwise).
    ///
    /// - Parameter ready: the reasons the process cannot serve now, empty when it can. Each check
    ///   should bound its own wait (`Readiness.check`), so a probe is answered in time.
    public static func addHealth<Context: RequestContext>(
        to router: Router<Context>,
        ready: @escaping @Sendable () async -> [String]
    ) {
        router.get("/health/live") { _, _ -> Response in
            try JSONResponse.make(.ok, ["status": "live"])
        }
        router.get("/health/ready") { _, _ -> Response in
            let reasons = await ready()
            guard reasons.isEmpty else {
                return try JSONResponse.make(.serviceUnavailable, Readiness(status: "not_ready", reasons: reasons))
            }
            return try JSONResponse.make(.ok, Readiness(status: "ready", reasons: []))
        }
    }

    /// Runs one readiness check, giving up after `timeout`: the reason it failed, or `nil`.
    /// A check still running at the timeout is cancelled and not waited for: a probe is answered
    /// in time even when what it asks hangs.
    public static func check(
        _ name: String,
        timeout: Duration = .seconds(2),
        _ body: @escaping @Sendable () async throws -> Void
    ) async -> String? {
        let outcome = Outcome()
        return await withCheckedContinuation { continuation in
            outcome.start(continuation)
            let work = Task {
                do {
                    try await body()
                    outcome.finish(nil)
                } catch {
                    outcome.finish("\(name): \(error)")
                }
            }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                if !Task.isCancelled { outcome.finish("\(name): no answer within \(timeout)") }
            }
            outcome.hold([work, timer])
        }
    }

    /// The first of a check's two endings (its answer, or the timeout) resumes the caller and
    /// cancels the other.
    private final class Outcome: Sendable {
        private let state = Mutex<(waiting: CheckedContinuation<String?, Never>?, tasks: [Task<Void, Never>])>(
            (nil, [])
        )

        func start(_ waiting: CheckedContinuation<String?, Never>) {
            state.withLock { $0.waiting = waiting }
        }

        /// The tasks to cancel at the end; cancelled at once when it came already.
        func hold(_ tasks: [Task<Void, Never>]) {
            let ended = state.withLock { state in
                state.tasks = tasks
                return state.waiting == nil
            }
            if ended { for task in tasks { task.cancel() } }
        }

        func finish(_ reason: String?) {
            let (waiting, tasks) = state.withLock { state in
                defer { state = (nil, []) }
                return state
            }
            waiting?.resume(returning: reason)
            for task in tasks { task.cancel() }
        }
    }

    /// `/health/ready`'s body.
    struct Readiness: Encodable {
        var status: String
        var reasons: [String]
    }
}

/// Counts and times every request by method, route pattern and status
/// (`herald_http_requests_total`, `herald_http_request_duration_seconds`), and writes one access
/// log line per request at info. Only what the router knows of the request's shape goes into
/// either: the route's pattern (`/v1/pushes/{id}`, never the ids in the path), no query, no
/// header (the bearer secret is one), no body; plus what the route added (`AccessLog`).
///
/// Each request gets an id (the client's `x-request-id` when usable, else a new one), answered in
/// the `x-request-id` header, written on its access line as `request_id`, and bound to
/// `AccessLog.current` while it is handled, so the lines logged meanwhile carry it too.
///
/// Add it to a router before anything else, so it sees every route and the final status.
public struct HTTPObservabilityMiddleware<Context: RequestContext>: RouterMiddleware {
    private let logger: Logger
    private let instruments = Instruments()

    /// - Parameter logger: where the access log goes (label `herald.access` in the servers).
    public init(logger: Logger) {
        self.logger = logger
    }

    public func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let started = ContinuousClock.now
        let log = AccessLog(requestID: AccessLog.requestID(honouring: request.headers[AccessLog.header]))
        return try await AccessLog.$current.withValue(log) {
            var response: Response
            do {
                response = try await next(request, context)
            } catch let error as any HTTPResponseError {
                // Made into its answer here rather than further out (where the router would make
                // the same one), so the answer carries the request id too.
                response = try error.response(from: request, context: context)
            } catch {
                // Anything else becomes a bare 500 further out.
                record(request, context, log, status: 500, since: started, bytes: nil)
                throw error
            }
            response.headers[AccessLog.header] = log.requestID
            // Recorded before the body is written: a client that has read the answer and asks
            // `/metrics` next finds its request counted. The bodies are buffers already.
            record(
                request,
                context,
                log,
                status: response.status.code,
                since: started,
                bytes: response.body.contentLength
            )
            return response
        }
    }

    private func record(
        _ request: Request,
        _ context: Context,
        _ log: AccessLog,
        status: Int,
        since started: ContinuousClock.Instant,
        bytes: Int?
    ) {
        let elapsed = ContinuousClock.now - started
        let method = request.method.rawValue
        let route = Self.route(context)
        instruments.record(method: method, route: route, status: status, elapsed: elapsed)
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        var metadata = log.added
        metadata["request_id"] = .string(log.requestID)
        metadata["method"] = .string(method)
        metadata["route"] = .string(route)
        metadata["status"] = .stringConvertible(status)
        metadata["duration_ms"] = .stringConvertible((milliseconds * 1000).rounded() / 1000)
        // Unknown for a streamed body: left out rather than written as something not a number.
        metadata["bytes"] = bytes.map { .stringConvertible($0) }
        logger.info("request", metadata: metadata)
    }

    private static func route(_ context: Context) -> String {
        guard let path = context.endpointPath, path != "NotFound" else { return HTTPObservability.unmatchedRoute }
        return path
    }

    /// One counter and one timer per method, route and status, made once: swift-metrics would
    /// otherwise look them up in the registry (under its lock) on every request.
    final class Instruments: Sendable {
        struct Key: Hashable {
            var method: String
            var route: String
            var status: Int
        }

        private let made = Mutex<[Key: (Counter, Metrics.Timer)]>([:])

        func record(method: String, route: String, status: Int, elapsed: Duration) {
            let key = Key(method: method, route: route, status: status)
            let (counter, timer) = made.withLock { made in
                if let found = made[key] { return found }
                let dimensions = [("method", method), ("route", route), ("status", String(status))]
                let pair = (
                    Counter(label: HTTPObservability.requestsName, dimensions: dimensions),
                    Metrics.Timer(label: HTTPObservability.durationName, dimensions: dimensions)
                )
                made[key] = pair
                return pair
            }
            counter.increment()
            timer.recordNanoseconds(
                elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
            )
        }
    }
}
