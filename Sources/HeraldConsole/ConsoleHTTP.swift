import Foundation
import HTTPTypes
import HeraldConsoleCore
import HeraldRelay
import Hummingbird
import NIOCore

/// The console's answers: HTML with the headers every console page carries, redirects, forms.
enum ConsoleHTTP {
    /// No script but the console's own file, no inline style or script, no framing, forms only to
    /// the console itself: a page that somehow showed injected markup still could not run it.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    /// The headers of every console answer.
    static func secure(_ headers: inout HTTPFields) {
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        headers[HTTPField.Name("x-frame-options")!] = "DENY"
        headers[.xContentTypeOptions] = "nosniff"
        headers[HTTPField.Name("referrer-policy")!] = "no-referrer"
        // Pages show live state and an operator's data: never from a cache, shared or not.
        headers[.cacheControl] = "no-store"
    }

    /// An HTML page.
    static func html(_ status: HTTPResponse.Status = .ok, _ body: String, cookies: [ConsoleCookie] = []) -> Response {
        var headers: HTTPFields = [.contentType: "text/html; charset=utf-8"]
        secure(&headers)
        for cookie in cookies { headers.append(HTTPField(name: .setCookie, value: cookie.header)) }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    /// A stream of server-sent events that `write` writes until it returns.
    static func eventStream(
        _ write: @escaping @Sendable (inout any ResponseBodyWriter) async throws -> Void
    )
        -> Response
    {
        var headers: HTTPFields = [.contentType: "text/event-stream; charset=utf-8"]
        secure(&headers)
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { writer in
                try await write(&writer)
                try await writer.finish(nil)
            }
        )
    }

    /// A 303 to `location` (a form's answer: the browser then GETs the page).
    static func redirect(_ location: String, cookies: [ConsoleCookie] = []) -> Response {
        var headers: HTTPFields = [.location: location]
        secure(&headers)
        for cookie in cookies { headers.append(HTTPField(name: .setCookie, value: cookie.header)) }
        return Response(status: .seeOther, headers: headers)
    }

    /// Whether the request came over TLS (directly or, as a proxy says, to it): then the cookies
    /// are `Secure`.
    static func isSecure(_ request: Request, configured: Bool) -> Bool {
        configured
            || request.headers[HTTPField.Name("x-forwarded-proto")!]?.lowercased() == "https"
    }

    /// Whether a form post comes from a page of another site, by what the browser says of it:
    /// `sec-fetch-site` (every current browser sends it) or else `origin` against `host`. A form
    /// must also carry its token; this refuses earlier, and names the reason.
    static func isCrossSite(_ request: Request) -> Bool {
        if let site = request.headers[HTTPField.Name("sec-fetch-site")!] {
            return site != "same-origin" && site != "none"
        }
        guard let origin = request.headers[.origin] else { return false }
        guard let host = request.head.authority else { return true }
        let stripped = origin.split(separator: "://", maxSplits: 1).last.map(String.init) ?? origin
        return stripped != host
    }

    /// A form's fields (`application/x-www-form-urlencoded`), at most `limit` bytes.
    static func form<T: Decodable>(_ type: T.Type, _ request: Request, limit: Int) async throws(ConsoleError) -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch {
            throw .badRequest("the form is larger than \(limit) bytes")
        }
        do {
            return try URLEncodedFormDecoder().decode(T.self, from: String(buffer: buffer))
        } catch {
            throw .badRequest("the form is missing a field or has one it does not take")
        }
    }

    /// The address a request came from, for the sign-in throttle.
    static func address(_ channel: any Channel) -> String {
        channel.remoteAddress?.ipAddress ?? "unknown"
    }

    /// A local path to go back to after sign-in; anything else (another site, `//host`) is the
    /// overview.
    static func localPath(_ text: String?) -> String {
        guard let text, text.hasPrefix("/console/"), !text.hasPrefix("//"), !text.contains("\\"),
            text.utf8.count <= 512, !text.contains(where: { $0.isNewline })
        else { return "/console/overview" }
        return text
    }
}

/// Why the console refused a request: shown as an HTML page with its status.
struct ConsoleError: Error, Sendable {
    private enum Code: Sendable {
        case badRequest
        case forbidden
        case notFound
        case crossSite
        case tooManyRequests
        case unavailable
    }

    private let code: Code
    /// What went wrong, in words for the operator; never a secret or content.
    let detail: String

    private init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    static func badRequest(_ detail: String) -> Self { Self(.badRequest, detail) }
    static func forbidden(_ detail: String) -> Self { Self(.forbidden, detail) }
    static func notFound(_ detail: String) -> Self { Self(.notFound, detail) }
    static let crossSite = Self(.crossSite, "the form was posted from another site, or without its token")
    static func tooManyRequests(_ detail: String) -> Self { Self(.tooManyRequests, detail) }
    static func unavailable(_ detail: String) -> Self { Self(.unavailable, detail) }

    var status: HTTPResponse.Status {
        switch code {
        case .badRequest: .badRequest
        case .forbidden, .crossSite: .forbidden
        case .notFound: .notFound
        case .tooManyRequests: .tooManyRequests
        case .unavailable: .serviceUnavailable
        }
    }

    /// The page's heading.
    var title: String {
        switch code {
        case .badRequest: "That request is not one the console takes"
        case .forbidden: "Not allowed"
        case .crossSite: "Refused: not from this console"
        case .notFound: "Not found"
        case .tooManyRequests: "Too many attempts"
        case .unavailable: "The store is unavailable"
        }
    }

    /// The console's page for any error a handler threw: the relay's refusals keep their status
    /// and words; anything else is the store failing (its words stay in the log).
    static func from(_ error: any Error) -> ConsoleError {
        if let error = error as? ConsoleError { return error }
        if let error = error as? RelayError {
            switch error.status {
            case .notFound: return .notFound(error.detail)
            case .badRequest: return .badRequest(error.detail)
            case .forbidden: return .forbidden(error.detail)
            default: return .unavailable(error.detail)
            }
        }
        return .unavailable("the console could not read the store; try again")
    }
}
