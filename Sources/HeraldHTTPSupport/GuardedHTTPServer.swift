public import Hummingbird
public import HummingbirdCore
public import HummingbirdWebSocket
import Logging
public import NIOCore
import NIOHTTP1
import NIOSSL

/// Hummingbird server builders with Herald's connection limits (`HTTPConnectionLimits`): the
/// idle timeout (Hummingbird's own), a header-read timeout, a connection cap, and a JSON 400
/// that closes the connection for a request NIO cannot parse. Each builder counts the
/// connections of the one listener it is given to.
extension HTTPServerBuilder {
    /// HTTP/1.1 in clear.
    public static func guardedHTTP1(limits: HTTPConnectionLimits) -> HTTPServerBuilder {
        guarded(limits: limits, encrypted: false) { responder in
            HTTP1Channel(responder: responder, configuration: .init(idleTimeout: TimeAmount(limits.idleTimeout)))
        }
    }

    /// HTTP/1.1 in clear with WebSocket upgrades decided by `webSocketRouter` (its `ws` routes).
    /// A route that refuses an upgrade can give the answer with `UpgradeRefusal` instead of
    /// hummingbird-websocket's bare 400.
    public static func guardedHTTP1WebSocketUpgrade<WebSocketRouter: HTTPResponderBuilder & _HB_SendableMetatype>(
        webSocketRouter: WebSocketRouter,
        limits: HTTPConnectionLimits
    ) -> HTTPServerBuilder where WebSocketRouter.Responder.Context: WebSocketRequestContext {
        let webSocketResponder = webSocketRouter.buildResponder()
        return guarded(limits: limits, encrypted: false) { responder in
            HTTP1WebSocketUpgradeChannel(
                responder: responder,
                webSocketResponder: webSocketResponder,
                configuration: .init(http1: .init(idleTimeout: TimeAmount(limits.idleTimeout)))
            )
        }
    }

    /// Any child channel under the guard. `encrypted`: the channel starts with a
    /// `NIOSSLServerHandler` (TLS from the first byte); the guard goes after it, closes a
    /// connection over the cap without an answer and one whose handshake takes longer than the
    /// header-read timeout; the 400 and the per-request head timer are left out (they need the
    /// HTTP/1 parts, which only exist after ALPN), so the channel's own idle timeout must bound
    /// a slow client after the handshake.
    public static func guarded<Channel: ServerChildChannel>(
        limits: HTTPConnectionLimits,
        encrypted: Bool,
        _ build: @escaping @Sendable (@escaping HTTPChannelHandler.Responder) throws -> Channel
    ) -> HTTPServerBuilder {
        let connections = ConnectionCount(limit: limits.maxConnections)
        return .init { responder in
            GuardedChannel(
                base: try build(responder),
                limits: limits,
                connections: connections,
                plaintext: !encrypted
            )
        }
    }
}

/// A child channel with `HTTPConnectionGuard` in front and, in clear, `HTTPExchangeWatcher`
/// right after NIO's HTTP/1 decoder.
struct GuardedChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    let limits: HTTPConnectionLimits
    let connections: ConnectionCount
    let plaintext: Bool

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let connectionGuard = HTTPConnectionGuard(limits: limits, connections: connections, plaintext: plaintext)
        let plaintext = plaintext
        // The child channel is set up on its own event loop, before it is registered: nothing
        // has been read when the handlers go in.
        return base.setup(channel: channel, logger: logger).assumeIsolated().flatMapThrowing { value in
            let operations = channel.pipeline.syncOperations
            guard plaintext else {
                // After the TLS handler: the guard sees the handshake complete.
                let tls = try operations.handler(type: NIOSSLServerHandler.self)
                try operations.addHandler(connectionGuard, position: .after(tls))
                return value
            }
            try operations.addHandler(connectionGuard, position: .first)
            // Both Hummingbird's HTTP/1 pipeline and the WebSocket upgrade pipeline start with
            // NIO's decoder; the watcher goes right after it, before the upgrade handler or
            // Hummingbird's codec.
            let decoder = try operations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try operations.addHandler(HTTPExchangeWatcher(connectionGuard: connectionGuard), position: .after(decoder))
            return value
        }.nonisolated()
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
