import Foundation
import HTTPTypes
import HeraldHTTPSupport
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// The Web Push listener: HTTP/2 (or HTTP/1.1) over TLS, with ALPN, on the sandbox's TLS
/// identity. `POST /wp/{id}`, a subscription's endpoint, as RFC 8030 §5 and the push services
/// answer it.
enum SandboxWebPushServer {
    typealias Context = BasicRequestContext

    static func router(core: SandboxCore) -> Router<Context> {
        let router = Router(context: Context.self)
        router.middlewares.add(JSONErrorMiddleware(WebPushErrorAnswer.style))
        router.post("/wp/:id") { request, context -> Response in
            let id = try context.parameters.require("id")
            var headers: [String: String] = [:]
            for name in SandboxWebPushRequest.headerNames {
                headers[name] = HTTPField.Name(name).flatMap { request.headers[$0] }
            }
            // Too large: nil, which the emulator answers 413.
            let body = try? await request.body.collect(upTo: WebPushEmulator.maximumBody)
            let answer = core.webPush.receive(
                SandboxWebPushRequest(
                    subscriptionID: id,
                    headers: headers,
                    body: body.map { Array($0.readableBytesView) }
                )
            )
            return try await response(answer)
        }
        return router
    }

    private static func response(_ answer: SandboxWebPushAnswer) async throws -> Response {
        if answer.delay > .zero { try await Task.sleep(for: answer.delay) }
        var headers = HTTPFields()
        if !answer.body.isEmpty { headers[.contentType] = "application/json" }
        if let location = answer.location { headers[.location] = location }
        if let ttl = answer.ttl { headers[HTTPField.Name("TTL")!] = String(ttl) }
        if let retryAfter = answer.retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(
            status: .init(code: answer.status),
            headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: answer.body))
        )
    }
}

/// Hummingbird's refusals (an unknown path, a method not allowed) in the listener's JSON shape.
enum WebPushErrorAnswer {
    static let style = JSONErrorStyle(
        refusal: { status, _, _ in response(status: status.code, message: status.reasonPhrase) },
        internalError: { response(status: 500, message: "Internal error.") }
    )

    static func response(status: Int, message: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        let body = #"{"code":\#(status),"error":"\#(HTTPReason.phrase(status))","message":"\#(message)"}"#
        return Response(
            status: .init(code: status),
            headers: headers,
            body: .init(byteBuffer: ByteBuffer(string: body))
        )
    }
}

/// The Web Push service unreachable for a while (`POST /sandbox/faults/outage`): open
/// connections are closed at once, new ones as soon as they are accepted, before TLS, so a
/// sender's handshake fails as against a host that is down.
final class WebPushOutage: Sendable {
    private struct State {
        var until: ContinuousClock.Instant?
        var channels: [ObjectIdentifier: any Channel] = [:]
    }

    private let state = Mutex(State())

    /// Starts an outage of `duration`, replacing one running; closes every open connection.
    func begin(for duration: Duration) {
        let open = state.withLock { state in
            state.until = .now + duration
            return Array(state.channels.values)
        }
        for channel in open { channel.close(promise: nil) }
    }

    /// Ends an outage early.
    func end() {
        state.withLock { $0.until = nil }
    }

    /// Whether a connection accepted now is to be closed; otherwise it is tracked until it
    /// closes, for the next outage to close.
    func admit(_ channel: any Channel) -> Bool {
        let admitted = state.withLock { state in
            if let until = state.until, ContinuousClock.now < until { return false }
            state.channels[ObjectIdentifier(channel)] = channel
            return true
        }
        if admitted {
            channel.closeFuture.whenComplete { [self] _ in
                _ = state.withLock { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
            }
        }
        return admitted
    }
}
