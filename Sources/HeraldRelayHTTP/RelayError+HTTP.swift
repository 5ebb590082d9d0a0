public import HeraldHTTPSupport
import HeraldObservability
public import HeraldRelay
public import Hummingbird

/// A relay refusal is its own HTTP answer: a route throws it and Hummingbird (or
/// `JSONErrorMiddleware`, first) writes `{"error", "reason", "field"?}` with its status. The
/// conformance lives here so that HeraldRelay knows no transport.
extension RelayError: JSONResponseError {
    /// The HTTP status that carries this kind of error.
    public var status: HTTPResponse.Status {
        if isInvalidField { return .badRequest }
        if isTooManyRequests { return .tooManyRequests }
        // The user's state refuses the message (no device yet): the same request may succeed once
        // it changed, which is what 409 says; 404 would read as an unknown route or adapter.
        if isNoDevices { return .conflict }
        switch self {
        case .unauthorized: return .unauthorized
        case .forbidden: return .forbidden
        case .notFound: return .notFound
        case .conflict: return .conflict
        case .unavailable: return .serviceUnavailable
        // A kind added to the relay without a status here shows as a 500, not as a guess.
        default: return .internalServerError
        }
    }

    /// The JSON answer, with `Retry-After` where the same request may be sent again later.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        // The refusal's kind on the access line; not its reason, which may quote the request.
        AccessLog.current?["error"] = .string(identifier)
        if let user { return NoDevicesBody.answer(self, user: user) }
        var response = JSONResponse.error(status, identifier, reason: detail, field: field)
        if let retryAfter {
            // A quota: the same request is admitted once the bucket holds it again.
            response.headers[.retryAfter] = "\(max(1, Int((retryAfter / .seconds(1)).rounded(.up))))"
        }
        if response.status == .serviceUnavailable {
            // The store is away (a database restarting or failing over): nothing was written, and
            // the same request, with its idempotency key, may be sent again shortly.
            response.headers[.retryAfter] = "\(Self.retryAfterSeconds)"
        }
        return response
    }

    /// What a 503 tells the client to wait before sending again.
    static let retryAfterSeconds = 2

    /// Marks a body-size refusal, answered as 413.
    var tooLarge: TooLargeError { TooLargeError(error: self) }
}

/// A body over the size limit: 413 `body_too_large` with the usual JSON.
struct TooLargeError: JSONResponseError {
    let error: RelayError

    var status: HTTPResponse.Status { .contentTooLarge }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        JSONResponse.error(status, "body_too_large", reason: error.detail, field: "body")
    }
}
