import HeraldAPNsCore
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// A request on the wire: everything but the stream id.
struct APNsWireRequest: Sendable {
    let path: String
    let authorization: String
    let notification: APNsNotification
}

/// An answer on the wire.
struct APNsWireResponse: Sendable {
    let status: Int
    let apnsID: String?
    let uniqueID: String?
    let body: ByteBuffer?
}

/// What a connection tells its pool.
enum APNsConnectionEvent: Sendable, Equatable {
    /// The server's MAX_CONCURRENT_STREAMS changed (APNs raises it after the first valid token).
    case streamLimit(Int)
    /// GOAWAY received or the stream ids are used up: no new requests on this connection.
    case goingAway
    /// The connection is closed.
    case closed
}

/// One HTTP/2 + TLS connection to APNs.
///
/// Built on swift-nio-http2 at the frame level rather than on async-http-client: the provider
/// needs what a general HTTP client hides — the server's stream limit as it changes, GOAWAY's
/// last stream id (to resend exactly the requests APNs did not process), PINGs on idle
/// connections — and one channel per connection instead of one per stream keeps a push at a few
/// microseconds of client work (docs/performance.md).
final class APNsConnection: Sendable {
    let channel: any Channel

    private init(channel: any Channel) {
        self.channel = channel
    }

    static func connect(
        host: String,
        port: Int,
        sslContext: NIOSSLContext,
        serverHostname: String?,
        group: any EventLoopGroup,
        connectTimeout: TimeAmount,
        pingInterval: TimeAmount,
        logger: Logger,
        onEvent: @escaping @Sendable (APNsConnectionEvent) -> Void
    ) async throws -> APNsConnection {
        let authority = port == 443 ? host : "\(host):\(port)"
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverHostname))
                    try sync.addHandler(IdleStateHandler(allTimeout: pingInterval))
                    try sync.addHandler(FlushCoalescingHandler())
                    try sync.addHandler(
                        NIOHTTP2Handler(
                            mode: .client,
                            initialSettings: [
                                HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
                                HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
                                HTTP2Setting(parameter: .enablePush, value: 0),
                            ],
                            // The handler builds every header block itself from validated parts;
                            // checking them again per push is pure cost.
                            headerBlockValidation: .disabled,
                            contentLengthValidation: .disabled
                        )
                    )
                    try sync.addHandler(
                        APNsClientHandler(authority: authority, logger: logger, onEvent: onEvent)
                    )
                }
            }
            .connect(host: host, port: port)
            .get()
        return APNsConnection(channel: channel)
    }

    /// Sends one request; the future completes with the answer or an `APNsClientError`.
    func send(_ request: APNsWireRequest, timeout: TimeAmount) -> EventLoopFuture<APNsWireResponse> {
        let promise = channel.eventLoop.makePromise(of: APNsWireResponse.self)
        Self.write(APNsStreamCommand(request: request, timeout: timeout, promise: promise), to: channel)
        return promise.futureResult
    }

    /// Sends several requests in one event-loop submission; the future completes when every
    /// one has its answer or error. One hop onto the loop and one back per batch, instead of per
    /// request, is most of what a push costs the client.
    func send(batch: [APNsWireRequest], timeout: TimeAmount) -> EventLoopFuture<[Result<APNsWireResponse, any Error>]> {
        let loop = channel.eventLoop
        let promises = batch.map { _ in loop.makePromise(of: APNsWireResponse.self) }
        let channel = channel
        loop.execute {
            for (request, promise) in zip(batch, promises) {
                Self.write(APNsStreamCommand(request: request, timeout: timeout, promise: promise), to: channel)
            }
        }
        return EventLoopFuture.whenAllComplete(promises.map(\.futureResult), on: loop)
    }

    func close() {
        channel.close(promise: nil)
    }

    /// A command written to a channel that has already closed never reaches the handler, which
    /// would leave its caller waiting forever: such a write fails the command as not processed.
    private static func write(_ command: APNsStreamCommand, to channel: any Channel) {
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenFailure { _ in command.promise.fail(APNsClientError.notProcessed) }
        channel.write(command, promise: written)
    }
}

/// A request handed to the connection's handler.
struct APNsStreamCommand: Sendable {
    let request: APNsWireRequest
    let timeout: TimeAmount
    let promise: EventLoopPromise<APNsWireResponse>
}

/// Turns commands into HTTP/2 streams and frames back into answers.
final class APNsClientHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundIn = APNsStreamCommand
    typealias OutboundOut = HTTP2Frame

    private struct Stream {
        let promise: EventLoopPromise<APNsWireResponse>
        /// When the request gives up waiting for its answer.
        let deadline: NIODeadline
        var status: Int?
        var apnsID: String?
        var uniqueID: String?
        var body: ByteBuffer?
    }

    private static let connectionWindow = 1 << 24

    private let authority: String
    private let logger: Logger
    private let onEvent: @Sendable (APNsConnectionEvent) -> Void
    private var streams: [HTTP2StreamID: Stream] = [:]
    private var nextStreamID: Int32 = 1
    private var goingAway = false
    /// The repeating deadline check, while requests are in flight.
    private var sweep: RepeatedTask?
    /// How late past its deadline a request may learn it timed out.
    static let sweepInterval = TimeAmount.milliseconds(50)
    private var pingOutstanding = false

    init(authority: String, logger: Logger, onEvent: @escaping @Sendable (APNsConnectionEvent) -> Void) {
        self.authority = authority
        self.logger = logger
        self.onEvent = onEvent
    }

    func channelActive(context: ChannelHandlerContext) {
        let frame = HTTP2Frame(
            streamID: .rootStream,
            payload: .windowUpdate(windowSizeIncrement: Self.connectionWindow - 65_535)
        )
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        context.fireChannelActive()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive {
            let frame = HTTP2Frame(
                streamID: .rootStream,
                payload: .windowUpdate(windowSizeIncrement: Self.connectionWindow - 65_535)
            )
            context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let command = unwrapOutboundIn(data)
        promise?.succeed()
        guard !goingAway, nextStreamID < Int32.max - 2 else {
            command.promise.fail(APNsClientError.notProcessed)
            return
        }
        let streamID = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        if nextStreamID >= Int32.max - 2 {
            // Stream ids are finite: this connection takes no more, the pool opens another.
            goingAway = true
            onEvent(.goingAway)
        }

        let notification = command.request.notification
        var headers = HPACKHeaders()
        headers.reserveCapacity(12)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: authority)
        headers.add(name: ":path", value: command.request.path, indexing: .nonIndexable)
        headers.add(name: APNsHeader.authorization, value: command.request.authorization)
        headers.add(name: APNsHeader.topic, value: notification.topic)
        headers.add(name: APNsHeader.pushType, value: notification.pushType.rawValue)
        headers.add(name: APNsHeader.priority, value: String(notification.priority.rawValue))
        headers.add(name: APNsHeader.id, value: notification.apnsID, indexing: .nonIndexable)
        if let expiration = notification.expiration {
            headers.add(name: APNsHeader.expiration, value: String(expiration), indexing: .nonIndexable)
        }
        if let collapseID = notification.collapseID {
            headers.add(name: APNsHeader.collapseID, value: collapseID, indexing: .nonIndexable)
        }
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: String(notification.payload.readableBytes))

        streams[streamID] = Stream(promise: command.promise, deadline: .now() + command.timeout)
        startSweeping(context: context)
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: false)))
            ),
            promise: nil
        )
        context.write(
            wrapOutboundOut(
                HTTP2Frame(
                    streamID: streamID,
                    payload: .data(.init(data: .byteBuffer(notification.payload), endStream: true))
                )
            ),
            promise: nil
        )
        // Flushed stream by stream: the HTTP/2 stack sends the DATA it buffered for every flushed
        // stream in hash order, so one flush for many requests would send their bodies out of
        // order, and APNs (and the stack's own stream maps, on both sides) would complete them
        // out of order. The flushes below the HTTP/2 handler are coalesced into one per tick.
        context.flush()
    }

    /// Per-request deadlines are checked by one repeating sweep while requests are in flight,
    /// not by a timer per request: cancelling a timer is a linear search of the event loop's timer
    /// heap, and every answered request would cancel one.
    private func startSweeping(context: ChannelHandlerContext) {
        guard sweep == nil else { return }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        sweep = context.eventLoop.scheduleRepeatedTask(initialDelay: Self.sweepInterval, delay: Self.sweepInterval) {
            _ in
            let (handler, context) = loopBound.value
            handler.timeOutExpired(context: context)
        }
    }

    private func stopSweeping() {
        sweep?.cancel()
        sweep = nil
    }

    private func timeOutExpired(context: ChannelHandlerContext) {
        guard !streams.isEmpty else {
            stopSweeping()
            return
        }
        let now = NIODeadline.now()
        let expired = streams.filter { $0.value.deadline <= now }
        guard !expired.isEmpty else { return }
        for (streamID, stream) in expired {
            streams[streamID] = nil
            stream.promise.fail(APNsClientError.timeout)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
        }
        context.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        pingOutstanding = false
        switch frame.payload {
        case .headers(let headers):
            guard streams[frame.streamID] != nil else { return }
            for (name, value, _) in headers.headers {
                switch name {
                case ":status": streams[frame.streamID]!.status = Int(value)
                case APNsHeader.id: streams[frame.streamID]!.apnsID = value
                case APNsHeader.uniqueID: streams[frame.streamID]!.uniqueID = value
                default: break
                }
            }
            if headers.endStream { complete(frame.streamID) }
        case .data(let data):
            guard streams[frame.streamID] != nil else { return }
            if case .byteBuffer(var buffer) = data.data, buffer.readableBytes > 0 {
                if streams[frame.streamID]!.body == nil {
                    streams[frame.streamID]!.body = buffer
                } else if (streams[frame.streamID]!.body?.readableBytes ?? 0) < 4096 {
                    streams[frame.streamID]!.body!.writeBuffer(&buffer)
                }
            }
            if data.endStream { complete(frame.streamID) }
        case .rstStream(let code):
            guard let stream = streams.removeValue(forKey: frame.streamID) else { return }
            // REFUSED_STREAM means the server did not process it (RFC 9113 §8.7).
            stream.promise.fail(code == .refusedStream ? APNsClientError.notProcessed : APNsClientError.connectionLost)
        case .settings(.settings(let settings)):
            if let limit = settings.last(where: { $0.parameter == .maxConcurrentStreams }) {
                onEvent(.streamLimit(limit.value))
            }
        case .goAway(let lastStreamID, _, let debugData):
            goingAway = true
            logger.debug(
                "APNs sent GOAWAY",
                metadata: ["last-stream": "\(lastStreamID)", "reason": "\(debugData.map { String(buffer: $0) } ?? "")"]
            )
            // Streams above the last one were not processed: they fail as such and are resent elsewhere.
            for (id, stream) in streams where id > lastStreamID {
                streams[id] = nil
                stream.promise.fail(APNsClientError.notProcessed)
            }
            onEvent(.goingAway)
        default:
            break
        }
    }

    private func complete(_ streamID: HTTP2StreamID) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        stream.promise.succeed(
            APNsWireResponse(
                status: stream.status ?? 0,
                apnsID: stream.apnsID,
                uniqueID: stream.uniqueID,
                body: stream.body
            )
        )
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let event as NIOHTTP2WindowUpdatedEvent where event.streamID == .rootStream:
            if let inbound = event.inboundWindowSize, inbound < Self.connectionWindow / 2 {
                let frame = HTTP2Frame(
                    streamID: .rootStream,
                    payload: .windowUpdate(windowSizeIncrement: Self.connectionWindow - inbound)
                )
                context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
            }
        case is IdleStateHandler.IdleStateEvent:
            if pingOutstanding {
                // A whole idle interval without even a PING answer: the connection is dead.
                logger.debug("APNs connection did not answer PING; closing")
                context.close(promise: nil)
            } else {
                pingOutstanding = true
                let ping = HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(), ack: false))
                context.writeAndFlush(wrapOutboundOut(ping), promise: nil)
            }
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopSweeping()
        let pending = streams
        streams.removeAll()
        for stream in pending.values {
            stream.promise.fail(APNsClientError.connectionLost)
        }
        onEvent(.closed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("APNs connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }
}

/// Between TLS and HTTP/2: flushes requested in one event-loop tick become one flush at its end,
/// so requests written (and flushed) one by one still leave in one TLS write.
final class FlushCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var flushPending = false

    func flush(context: ChannelHandlerContext) {
        guard !flushPending else { return }
        flushPending = true
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = loopBound.value
            handler.flushPending = false
            context.flush()
        }
    }
}
