import HeraldRelay
import HeraldTracing
import Hummingbird

extension API {
    /// Runs an ingest request's work in its server span, the root of each push's trace: a child
    /// of the backend's span when the request carries a W3C `traceparent` (docs/tracing.md).
    /// Off: the work runs alone, and no header is read.
    func traced<T>(
        _ route: String,
        _ request: Request,
        _ operation: () async throws -> T
    ) async throws -> T {
        let tracing = relay.tracing
        guard tracing.isOn else { return try await operation() }
        let traceParent = request.headers[.init(PushTracing.traceParentHeader)!]
        let traceState = request.headers[.init(PushTracing.traceStateHeader)!]
        return try await tracing.withSpan(
            "POST " + route,
            kind: .server,
            parent: .some(traceParent),
            traceState: traceState
        ) { span in
            span.set("http.request.method", "POST")
            span.set("http.route", route)
            return try await operation()
        }
    }
}
