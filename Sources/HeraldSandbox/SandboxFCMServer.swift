import Foundation
import HeraldEncoding
import HeraldFCMCore
import HeraldHTTPSupport
import Hummingbird
import HummingbirdHTTP2
import Logging
import NIOCore

/// The FCM listener: HTTP/2 (or HTTP/1.1) over TLS, with ALPN, on the APNs listener's TLS
/// identity. `POST /v1/projects/{project}/messages:send` and Google's OAuth2 token endpoint
/// `POST /token`.
///
/// Built on Hummingbird rather than at the frame level like the APNs listener: FCM's behaviour
/// lives in its HTTP answers (status, JSON body, `Retry-After`), not in HTTP/2 frames.
enum SandboxFCMServer {
    typealias Context = BasicRequestContext

    static func router(core: SandboxCore) -> Router<Context> {
        let router = Router(context: Context.self)
        router.middlewares.add(JSONErrorMiddleware(FCMErrorAnswer.style))

        router.post("/v1/projects/:project/messages:send") { request, context -> Response in
            let project = try context.parameters.require("project")
            // Too large (or cut off): nil, which the core answers 400.
            let body = try? await request.body.collect(upTo: FCMEmulator.maximumSendBody)
            let answer = core.fcm.send(
                project: project,
                authorization: request.headers[.authorization],
                body: body.map { Array($0.readableBytesView) }
            )
            return try await response(answer)
        }

        router.post("/token") { request, context -> Response in
            let body = try? await request.body.collect(upTo: 64 * 1024)
            let form = Self.form(body ?? ByteBuffer(), contentType: request.headers[.contentType])
            return try await response(core.fcm.grantAccessToken(form: form))
        }
        return router
    }

    private static func response(_ answer: SandboxFCMAnswer) async throws -> Response {
        try await answer.response(challenge: #"Bearer realm="https://accounts.google.com/""#)
    }

    /// The token request's parameters: `application/x-www-form-urlencoded` as RFC 6749 asks, or a
    /// JSON object of strings, which Google also takes.
    static func form(_ body: ByteBuffer, contentType: String?) -> [String: String] {
        let bytes = Data(body.readableBytesView)
        if contentType?.lowercased().hasPrefix("application/json") == true {
            // Bounded before Foundation builds anything from it; a body past the limits has no fields.
            guard (try? JSONCheck.check(Array(bytes), limits: .request)) != nil else { return [:] }
            let object = (try? JSONSerialization.jsonObject(with: bytes)) as? [String: Any]
            return (object ?? [:]).compactMapValues { $0 as? String }
        }
        var form: [String: String] = [:]
        for pair in String(decoding: bytes, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String? {
                text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            }
            guard let name = decode(parts[0]), form[name] == nil else { continue }
            form[name] = parts.count == 2 ? decode(parts[1]) ?? "" : ""
        }
        return form
    }
}

/// Google's JSON error body, as FCM answers: the emulator's errors, never an empty page.
enum FCMErrorAnswer {
    /// Hummingbird's refusals (an unknown URL, a method not allowed) as Google words them; a
    /// failure as FCM's `INTERNAL`.
    static let style = JSONErrorStyle(
        refusal: { status, _, request in
            let rpcStatus =
                switch status.code {
                case 404: "NOT_FOUND"
                case 405: "METHOD_NOT_ALLOWED"
                default: status.code < 500 ? "INVALID_ARGUMENT" : "INTERNAL"
                }
            let message =
                status.code == 404
                ? "The requested URL \(request.uri.path) was not found on this server." : status.reasonPhrase
            return response(FCMErrorBody(error: .init(code: status.code, message: message, status: rpcStatus)))
        },
        internalError: { response(FCMErrorBody(code: .internal)) }
    )

    static func response(_ body: FCMErrorBody) -> Response {
        SandboxFCMAnswer.json(body.error.code, body).immediateResponse()
    }
}
