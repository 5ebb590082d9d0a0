import Foundation
import HeraldMacros
public import Hummingbird
public import NIOCore
import NIOHTTP1

/// Sits right after NIO's HTTP/1 decoder of a guarded connection, where requests and responses
/// are parts: tells the connection's guard when a head arrived and a response ended, answers a
/// request the decoder cannot parse (two `Content-Length` headers, a bad request line) with a
/// JSON 400 and closes (RFC 9112 §6.3), and turns the bare 400 of a refused WebSocket upgrade
/// into the refusal its route gave (`UpgradeRefusal`).
final class HTTPExchangeWatcher: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let connectionGuard: HTTPConnectionGuard
    /// What the route said about a WebSocket upgrade it refused, until the refusal is written.
    private var refusal: UpgradeRefusal?
    /// The refusal's head went out in place of the bare 400; its body goes before the end.
    private var rewriting: UpgradeRefusal?
    private var answeredError = false
    /// The connection speaks WebSocket: what passes is frames' bytes, not HTTP parts, and goes
    /// through untouched. (Leaving the pipeline instead would drop the flush of the 101.)
    private var upgraded = false

    init(connectionGuard: HTTPConnectionGuard) {
        self.connectionGuard = connectionGuard
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if upgraded {
            context.fireChannelRead(data)
            return
        }
        guard !answeredError else { return }
        if case .head = unwrapInboundIn(data) { connectionGuard.headReceived() }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !upgraded, let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        // Hummingbird would answer a bare 400 and then wait for the client to close; the
        // decoder is unusable after an error, so the connection is closed here after the answer.
        guard !answeredError else { return }
        answeredError = true
        let mayAnswer = connectionGuard.mayAnswer
        connectionGuard.closing()
        guard mayAnswer else {
            context.close(promise: nil)
            return
        }
        let (field, reason) = Self.describe(parserError)
        let body = ByteBuffer(string: JSONResponse.errorJSON(error: "invalid_field", reason: reason, field: field))
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: String(body.readableBytes))
        headers.add(name: "connection", value: "close")
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .badRequest, headers: headers)))
        )
        .whenFailure { _ in }
        context.write(wrapOutboundOut(.body(.byteBuffer(body)))).whenFailure { _ in }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if upgraded {
            context.write(data, promise: promise)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status == .switchingProtocols:
            // From here the connection speaks WebSocket: no more heads, no timer, no parts.
            upgraded = true
            connectionGuard.upgraded()
            context.write(data, promise: promise)
        case .head(let head):
            // A refusal answers the declined upgrade's bare 400 and nothing else (over a plain
            // request the route's own answer went out instead).
            let refusal = self.refusal
            self.refusal = nil
            guard let refusal, head.status == .badRequest else {
                context.write(data, promise: promise)
                return
            }
            rewriting = refusal
            context.write(wrapOutboundOut(.head(refusal.head)), promise: promise)
        case .body where rewriting != nil:
            promise?.succeed(())
        case .end:
            if let refusal = rewriting {
                rewriting = nil
                context.write(wrapOutboundOut(.body(.byteBuffer(refusal.body))), promise: nil)
            }
            connectionGuard.responseEnded()
            context.write(data, promise: promise)
        default:
            context.write(data, promise: promise)
        }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard !upgraded, let refusal = event as? UpgradeRefusal else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        self.refusal = refusal
        promise?.succeed(())
    }

    /// The header at fault and what is wrong, for the 400's body.
    static func describe(_ error: HTTPParserError) -> (field: String, reason: String) {
        switch error {
        case .unexpectedContentLength:
            ("content-length", "Content-Length is given more than once (RFC 9112 §6.3)")
        case .invalidContentLength:
            ("content-length", "Content-Length must be one decimal number (RFC 9112 §6.3)")
        case .headerOverflow:
            ("request", "the request's headers are too large")
        default:
            ("request", "the request is not valid HTTP/1.1 (\(error))")
        }
    }
}

@available(*, unavailable)
extension HTTPExchangeWatcher: Sendable {}

/// A WebSocket upgrade a route refused, with the answer it should get instead of the bare 400
/// hummingbird-websocket writes: the route sends it on the request's channel
/// (`send(on:)`) before it declines the upgrade, and the connection's `HTTPExchangeWatcher`
/// writes it in place of the 400.
@MemberwiseInit
public struct UpgradeRefusal: Sendable {
    /// The status: 401 or 403 in practice.
    public var status: HTTPResponse.Status
    /// The usual JSON error body.
    public var error: JSONResponse.ErrorBody

    /// Hands the refusal to the connection; it goes out when the upgrade is declined.
    public func send(on channel: any Channel) async {
        // A channel without a watcher (not a guarded listener) keeps the bare 400.
        try? await channel.triggerUserOutboundEvent(self).get()
    }

    var body: ByteBuffer {
        ByteBuffer(string: JSONResponse.errorJSON(error: error.error, reason: error.reason, field: error.field))
    }

    var head: HTTPResponseHead {
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: String(body.readableBytes))
        headers.add(name: "connection", value: "close")
        if status == .unauthorized { headers.add(name: "www-authenticate", value: "Bearer") }
        return HTTPResponseHead(
            version: .http1_1,
            status: HTTPResponseStatus(statusCode: status.code, reasonPhrase: status.reasonPhrase),
            headers: headers
        )
    }
}
