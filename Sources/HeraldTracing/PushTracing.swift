public import Tracing

/// One trace per push: the spans Herald makes (ingest, store commit, claim, provider attempt,
/// receipt, webhook), through swift-distributed-tracing's `Tracer`, and a push's span context as
/// the W3C `traceparent` text that travels with it through the outbox, to other nodes and into
/// its webhook events.
///
/// Off (`PushTracing.off`, the default everywhere) it holds no tracer: every call runs its
/// operation alone, builds no string and starts no span, so the ingest path does nothing more
/// than without tracing. Spans carry ids, states, networks and answers: never a message's
/// content, a sender's name or a device token (docs/tracing.md).
public struct PushTracing: Sendable {
    /// Nil: tracing is off.
    private let tracer: (any Tracer)?

    /// Tracing off: no spans, no `traceparent`.
    public static let off = PushTracing(tracer: nil)

    /// Spans through `tracer` (swift-otel's, bootstrapped by the server; a test's own).
    public init(tracer: (any Tracer)?) {
        self.tracer = tracer
    }

    /// Whether spans are made.
    public var isOn: Bool { tracer != nil }

    /// The W3C header a span context travels in.
    public static let traceParentHeader = "traceparent"
    /// Its companion, the vendors' state, passed on with it when the backend sent one.
    public static let traceStateHeader = "tracestate"

    /// The current span's context as a `traceparent` (the task's `ServiceContext`); nil when
    /// tracing is off or no span is current.
    public func currentTraceParent() -> String? {
        guard let tracer, let context = ServiceContext.current else { return nil }
        var carrier: [String: String] = [:]
        tracer.inject(context, into: &carrier, using: HeaderInjector())
        return carrier[Self.traceParentHeader]
    }

    /// The context a `traceparent` (and `tracestate`) names, as a remote parent; the top level
    /// when there is none or it does not parse.
    func context(traceParent: String?, traceState: String? = nil) -> ServiceContext {
        guard let tracer, let traceParent else { return .topLevel }
        var context = ServiceContext.topLevel
        var carrier = [Self.traceParentHeader: traceParent]
        carrier[Self.traceStateHeader] = traceState
        tracer.extract(carrier, into: &context, using: HeaderExtractor())
        return context
    }

    /// Runs `operation` in a span named `name`: a child of the span `traceParent` names when one
    /// is given, else of the task's current span. The span is current while `operation` runs
    /// (spans it makes are its children) and ends when it returns; a thrown error marks it
    /// failed. Off: `operation` runs alone, with a span that records nothing.
    public func withSpan<T, E: Error>(
        _ name: String,
        kind: SpanKind = .internal,
        parent traceParent: String?? = nil,
        traceState: String? = nil,
        _ operation: (TraceSpan) async throws(E) -> T
    ) async throws(E) -> T {
        guard let tracer else { return try await operation(TraceSpan(nil)) }
        let parent: ServiceContext =
            switch traceParent {
            case .some(let given): context(traceParent: given, traceState: traceState)
            case .none: ServiceContext.current ?? .topLevel
            }
        let span = tracer.startSpan(name, context: parent, ofKind: kind)
        defer { span.end() }
        let result: Result<T, E> = await ServiceContext.$current.withValue(span.context) {
            do throws(E) {
                return .success(try await operation(TraceSpan(span)))
            } catch {
                return .failure(error)
            }
        }
        if case .failure(let error) = result {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
        }
        return try result.get()
    }

    /// Runs `operation` in a span of the trace `traceParent` names (a push's, read with it): a
    /// push made while tracing was off has none, and its operation runs alone, with no span.
    public func withSpan<T, E: Error>(
        _ name: String,
        kind: SpanKind = .internal,
        inTraceOf traceParent: String?,
        _ operation: (TraceSpan) async throws(E) -> T
    ) async throws(E) -> T {
        guard isOn, let traceParent else { return try await operation(TraceSpan(nil)) }
        return try await withSpan(name, kind: kind, parent: .some(traceParent), operation)
    }

    /// Starts a span now, to be ended by the caller (a batch's attempts, answered together):
    /// nil when tracing is off.
    public func startSpan(_ name: String, kind: SpanKind = .internal, parent traceParent: String?) -> TraceSpan? {
        guard let tracer else { return nil }
        return TraceSpan(tracer.startSpan(name, context: context(traceParent: traceParent), ofKind: kind))
    }

    /// `span`'s context as a `traceparent`, for a request or a record that carries it on.
    public func traceParent(of span: TraceSpan) -> String? {
        guard let tracer, let context = span.span?.context else { return nil }
        var carrier: [String: String] = [:]
        tracer.inject(context, into: &carrier, using: HeaderInjector())
        return carrier[Self.traceParentHeader]
    }
}

/// A span being made, or none (tracing off): attributes, a failure, its end.
public struct TraceSpan: Sendable {
    let span: (any Span)?

    init(_ span: (any Span)?) {
        self.span = span
    }

    /// Sets an attribute (ids, states, networks, statuses: never content or a token).
    public func set(_ key: String, _ value: String?) {
        guard let span, let value else { return }
        span.attributes[key] = value
    }

    /// Sets a number attribute.
    public func set(_ key: String, _ value: Int?) {
        guard let span, let value else { return }
        span.attributes[key] = value
    }

    /// Marks the span failed, with why (a reason, never content).
    public func fail(_ reason: String) {
        span?.setStatus(SpanStatus(code: .error, message: reason))
    }

    /// Ends the span (one made by `PushTracing.startSpan`).
    public func end() {
        span?.end()
    }
}

/// Reads `traceparent` and `tracestate` from a dictionary of lower-cased header names.
struct HeaderExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? {
        carrier[key.lowercased()]
    }
}

/// Writes header values into a dictionary, under lower-cased names.
struct HeaderInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key.lowercased()] = value
    }
}
