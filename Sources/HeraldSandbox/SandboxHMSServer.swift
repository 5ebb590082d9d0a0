import HeraldHMSCore
import HeraldHTTPSupport
import Hummingbird
import Logging
import NIOCore

/// The Push Kit listener: HTTP/2 (or HTTP/1.1) over TLS on the sandbox's identity, its own port.
/// `POST /v1/{appId}/messages:send` and Huawei's token endpoint `POST /oauth2/v3/token`.
enum SandboxHMSServer {
    static func router(core: SandboxCore) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        // Hummingbird's own refusals (no such route, a body too large) in Push Kit's body too.
        router.middlewares.add(
            JSONErrorMiddleware(
                JSONErrorStyle(
                    refusal: { status, message, request in
                        let code: HMSResultCode = status.code < 500 ? .invalidParameters : .internalError
                        let what =
                            status == .notFound
                            ? "no such API: \(request.method.rawValue) \(request.uri.path)"
                            : message ?? status.reasonPhrase
                        return SandboxFCMAnswer.json(status.code, HMSSendAnswer(code: code, msg: what, requestId: ""))
                            .immediateResponse()
                    },
                    internalError: {
                        SandboxFCMAnswer.json(500, HMSSendAnswer(code: .internalError, requestId: ""))
                            .immediateResponse()
                    }
                )
            )
        )
        router.post("/v1/:appID/messages:send") { request, context -> Response in
            let appID = try context.parameters.require("appID")
            // Too large (or cut off): nil, which the emulator answers 80300008.
            let body = try? await request.body.collect(upTo: HMSEmulator.maximumSendBody)
            return try await core.hms.send(
                appID: appID,
                authorization: request.headers[.authorization],
                body: body.map { Array($0.readableBytesView) }
            ).response(challenge: "Bearer")
        }
        router.post("/oauth2/v3/token") { request, _ -> Response in
            let body = try? await request.body.collect(upTo: 64 * 1024)
            let form = SandboxFCMServer.form(body ?? ByteBuffer(), contentType: request.headers[.contentType])
            return try await core.hms.grantAccessToken(form: form).response(challenge: "Bearer")
        }
        return router
    }
}
