import HeraldHTTPSupport
import Hummingbird
import Logging
import NIOCore
import Testing

/// What a route throws, and what the client gets for it: the error's own answer for a
/// `JSONResponseError`, the surface's style for every other error, JSON all the same.
@Suite(.timeLimit(.minutes(1)))
struct JSONErrorMiddlewareTests {
    struct Teapot: JSONResponseError {
        var status: HTTPResponse.Status { .init(code: 418) }

        func response(from request: Request, context: some RequestContext) throws -> Response {
            var response = JSONResponse.error(status, "teapot", reason: "short and stout", field: "spout")
            response.headers[.retryAfter] = "7"
            return response
        }
    }

    struct Secret: Error {}

    static let cases: [(thrown: (any Error)?, status: Int, body: String, retryAfter: String?)] = [
        (nil, 200, #"{"ok":true}"#, nil),
        (HTTPError(.notFound), 404, #"{"error":"not_found","reason":"no route POST /v1/nowhere"}"#, nil),
        (HTTPError(.methodNotAllowed), 405, #"{"error":"http_error","reason":"Method Not Allowed"}"#, nil),
        (HTTPError(.badRequest, message: "no id"), 400, #"{"error":"http_error","reason":"no id"}"#, nil),
        // NIO's own answer to a body past `collect(upTo:)` has no body at all.
        (NIOTooManyBytesError(maxBytes: 8), 413, #"{"error":"http_error","reason":"Content Too Large"}"#, nil),
        (Teapot(), 418, #"{"error":"teapot","field":"spout","reason":"short and stout"}"#, "7"),
        (Secret(), 500, #"{"error":"internal","reason":"the service failed"}"#, nil),
    ]

    @Test("each error becomes its status and JSON body", arguments: 0..<cases.count)
    func answers(index: Int) async throws {
        let (thrown, status, body, retryAfter) = Self.cases[index]
        let middleware = JSONErrorMiddleware<TestContext>(.herald(internalReason: "the service failed"))
        let request = Request(
            head: HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: "/v1/nowhere"),
            body: .init(buffer: ByteBuffer())
        )
        let context = TestContext(source: .init(logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }))
        let response = try await middleware.handle(request, context: context) { _, _ in
            if let thrown { throw thrown }
            return JSONResponse.text(.ok, #"{"ok":true}"#)
        }
        #expect(response.status.code == status)
        #expect(response.headers[.contentType] == "application/json")
        #expect(response.headers[.retryAfter] == retryAfter)
        #expect(try await Self.text(of: response) == body)
    }

    @Test("a style writes its own shape: the error message alone, as the sandbox's control API does")
    func style() async throws {
        let style = JSONErrorStyle(
            refusal: { status, message, _ in JSONResponse.text(status, #"{"error":"\#(message ?? "-")"}"#) },
            internalError: { JSONResponse.text(.internalServerError, #"{"error":"internal error"}"#) }
        )
        let middleware = JSONErrorMiddleware<TestContext>(style)
        let request = Request(
            head: HTTPRequest(method: .get, scheme: "http", authority: "l", path: "/"),
            body: .init(buffer: ByteBuffer())
        )
        let context = TestContext(source: .init(logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }))
        let refused = try await middleware.handle(request, context: context) { _, _ in
            throw HTTPError(.badRequest, message: "bad")
        }
        #expect(try await Self.text(of: refused) == #"{"error":"bad"}"#)
        let tooLarge = try await middleware.handle(request, context: context) { _, _ in
            throw NIOTooManyBytesError(maxBytes: 8)
        }
        #expect(tooLarge.status == .contentTooLarge)
        #expect(try await Self.text(of: tooLarge) == #"{"error":"-"}"#)
        let failed = try await middleware.handle(request, context: context) { _, _ in throw Secret() }
        #expect(failed.status == .internalServerError)
        #expect(try await Self.text(of: failed) == #"{"error":"internal error"}"#)
    }

    /// The body, as the server would write it.
    static func text(of response: Response) async throws -> String {
        let collector = Collector()
        try await response.body.write(collector)
        return String(buffer: collector.buffer)
    }

    final class Collector: ResponseBodyWriter, @unchecked Sendable {
        var buffer = ByteBuffer()

        func write(_ buffer: ByteBuffer) async throws {
            var buffer = buffer
            self.buffer.writeBuffer(&buffer)
        }

        func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}

/// A request context without a server: the middleware only needs its logger.
struct TestContext: RequestContext {
    struct Source: RequestContextSource {
        var logger: Logger
    }

    var coreContext: CoreRequestContextStorage

    init(source: Source) {
        coreContext = .init(source: source)
    }
}
