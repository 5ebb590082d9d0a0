public import Hummingbird
public import Logging

/// How one HTTP surface writes the error answers no route wrote itself: Hummingbird's own
/// refusals (no route, a body too large, a bad parameter) and failures nobody described.
///
/// Each surface keeps its documented shape (the relay's and the provider's `{"error", "reason"}`,
/// the sandbox control API's `{"error": message}`, Google's body on the FCM emulator); only the
/// catching is shared, in `JSONErrorMiddleware`.
public struct JSONErrorStyle: Sendable {
    /// The answer to a refusal Hummingbird raised: its status, what it said (nil when nothing),
    /// and the request (a 404 may name its path).
    public typealias Refusal = @Sendable (HTTPResponse.Status, _ message: String?, Request) -> Response

    let refusal: Refusal
    let internalError: @Sendable () -> Response

    /// - Parameters:
    ///   - refusal: the answer to one of Hummingbird's `HTTPError`s.
    ///   - internalError: the 500 for a failure that is no `HTTPResponseError`; it must not tell
    ///     what failed, which may quote the request or a secret.
    public init(refusal: @escaping Refusal, internalError: @escaping @Sendable () -> Response) {
        self.refusal = refusal
        self.internalError = internalError
    }

    /// Herald's own error body, `{"error": kind, "reason": why}` (`JSONResponse.error`): 404 is
    /// `not_found` naming the method and path, any other refusal `http_error`, and a failure
    /// `internal` with `internalReason`.
    public static func herald(internalReason: String) -> Self {
        Self(
            refusal: { status, message, request in
                status == .notFound
                    ? JSONResponse.error(
                        status,
                        "not_found",
                        reason: "no route \(request.method.rawValue) \(request.uri.path)"
                    )
                    : JSONResponse.error(status, "http_error", reason: message ?? status.reasonPhrase)
            },
            internalError: { JSONResponse.error(.internalServerError, "internal", reason: internalReason) }
        )
    }
}

/// An error that writes its own JSON answer in its surface's shape (`RelayError`, `SandboxError`,
/// …): `JSONErrorMiddleware` lets it. Any other `HTTPResponseError` (Hummingbird's, or NIO's for a
/// body past its limit, whose answers have no body) is written in the surface's `JSONErrorStyle`.
public protocol JSONResponseError: HTTPResponseError {}

/// Turns whatever a route throws into a JSON answer, so a client never gets an empty page:
///
/// - a `JSONResponseError` gives its own answer;
/// - any other `HTTPResponseError` (Hummingbird's `HTTPError`, NIO's too-many-bytes) is written
///   in the surface's `JSONErrorStyle` from its status (and an `HTTPError`'s message);
/// - anything else is logged (its type only) and answered the style's 500.
///
/// Add it right after `HTTPObservabilityMiddleware`, so the access log sees the final status.
public struct JSONErrorMiddleware<Context: RequestContext> {
    private let style: JSONErrorStyle
    private let logger: Logger?

    /// - Parameters:
    ///   - style: how this surface writes its errors.
    ///   - logger: where an unexpected failure is logged; the request context's logger when nil.
    public init(_ style: JSONErrorStyle, logger: Logger? = nil) {
        self.style = style
        self.logger = logger
    }
}

extension JSONErrorMiddleware: RouterMiddleware {
    /// `next`'s answer, or the answer to what it threw.
    public func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as any JSONResponseError {
            return try error.response(from: request, context: context)
        } catch let error as HTTPError {
            return style.refusal(error.status, error.body, request)
        } catch let error as any HTTPResponseError {
            return style.refusal(error.status, nil, request)
        } catch {
            // The type, not the error: its description may quote the request.
            (logger ?? context.logger).error(
                "unexpected failure in a route",
                metadata: ["error": "\(type(of: error))"]
            )
            return style.internalError()
        }
    }
}
