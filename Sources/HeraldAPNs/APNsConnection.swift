import HeraldAPNsCore
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// A request on the wire: everything but the stream id.
struct APNsWireRequest: Sendable {
    let path: String
    let authorization: String
    let notification: APNsNotification
}

/// An answer on the wire.
struct APNsWireResponse: Sendable, Equatable {
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
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverHostname))
                    try sync.addHandler(HandshakeHandler(timeout: connectTimeout))
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
        // Connected only once TLS is up: a server that takes the TCP connection and then drops
        // it (or fails the handshake) is as unreachable as one that refuses it, and must count
        // as a failed attempt, not as a connection that closed.
        do {
            try await channel.eventLoop.flatSubmit {
                do {
                    return try channel.pipeline.syncOperations.handler(type: HandshakeHandler.self).done
                } catch {
                    // The handler is gone only with the channel: it closed before we asked.
                    return channel.eventLoop.makeFailedFuture(
                        HandshakeFailure(message: "the connection closed before the TLS handshake finished")
                    )
                }
            }.get()
        } catch {
            channel.close(promise: nil)
            throw error
        }
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
    ///
    /// - Parameter answered: called on the event loop as each request gets its answer, with the
    ///   time since the batch was handed over (each request's own latency, which the batch's
    ///   future, waiting for the slowest, cannot tell).
    func send(
        batch: [APNsWireRequest],
        timeout: TimeAmount,
        answered: @escaping @Sendable (Duration) -> Void = { _ in }
    ) -> EventLoopFuture<[Result<APNsWireResponse, any Error>]> {
        let loop = channel.eventLoop
        let started = ContinuousClock.now
        let promises = batch.map { _ in loop.makePromise(of: APNsWireResponse.self) }
        for promise in promises {
            promise.futureResult.whenSuccess { _ in answered(ContinuousClock.now - started) }
        }
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
///
/// A thin shell around `APNsConnectionStateMachine`, which decides how every request ends and
/// when the connection goes: this handler turns channel events into its events and performs
/// its actions, and does only the wire work itself (headers, flow control, flushes, timers).
final class APNsClientHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundIn = APNsStreamCommand
    typealias OutboundOut = HTTP2Frame
    typealias StateMachine = APNsConnectionStateMachine<EventLoopPromise<APNsWireResponse>>

    private let authority: String
    private let logger: Logger
    private let onEvent: @Sendable (APNsConnectionEvent) -> Void
    private var machine = StateMachine()
    /// The repeating deadline check, while requests are in flight.
    private var sweep: RepeatedTask?
    /// How late past its deadline a request may learn it timed out.
    static let sweepInterval = TimeAmount.milliseconds(50)

    init(authority: String, logger: Logger, onEvent: @escaping @Sendable (APNsConnectionEvent) -> Void) {
        self.authority = authority
        self.logger = logger
        self.onEvent = onEvent
    }

    func channelActive(context: ChannelHandlerContext) {
        writeWindowUpdate(APNsConnectionWindow.opening, context: context)
        context.fireChannelActive()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { writeWindowUpdate(APNsConnectionWindow.opening, context: context) }
    }

    private func writeWindowUpdate(_ increment: Int, context: ChannelHandlerContext) {
        let frame = HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let command = unwrapOutboundIn(data)
        promise?.succeed()
        let actions = machine.handle(.send(command.promise, deadline: .now() + command.timeout))
        perform(actions, context: context, sending: command.request)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let read: StateMachine.Frame
        switch frame.payload {
        case .headers(let headers):
            var status: Int?
            var apnsID: String?
            var uniqueID: String?
            for (name, value, _) in headers.headers {
                switch name {
                case ":status": status = Int(value)
                case APNsHeader.id: apnsID = value
                case APNsHeader.uniqueID: uniqueID = value
                default: break
                }
            }
            read = .headers(
                frame.streamID,
                status: status,
                apnsID: apnsID,
                uniqueID: uniqueID,
                endStream: headers.endStream
            )
        case .data(let data):
            var body: ByteBuffer?
            if case .byteBuffer(let buffer) = data.data, buffer.readableBytes > 0 { body = buffer }
            read = .data(frame.streamID, body, endStream: data.endStream)
        case .rstStream(let code):
            read = .reset(frame.streamID, code)
        case .settings(.settings(let settings)):
            read = .settings(maxConcurrentStreams: settings.last { $0.parameter == .maxConcurrentStreams }?.value)
        case .goAway(let lastStreamID, _, let debugData):
            logger.debug(
                "APNs sent GOAWAY",
                metadata: ["last-stream": "\(lastStreamID)", "reason": "\(debugData.map { String(buffer: $0) } ?? "")"]
            )
            read = .goAway(lastStreamID: lastStreamID)
        case .ping(let data, ack: true):
            read = .pingAck(data.integer)
        default:
            read = .other
        }
        perform(machine.handle(.frame(read)), context: context)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let event as NIOHTTP2WindowUpdatedEvent where event.streamID == .rootStream:
            if let increment = APNsConnectionWindow.topUp(inbound: event.inboundWindowSize) {
                writeWindowUpdate(increment, context: context)
            }
        case is IdleStateHandler.IdleStateEvent:
            perform(machine.handle(.idle), context: context)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        perform(machine.handle(.channelInactive), context: context)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("APNs connection error", metadata: ["error": "\(error)"])
        perform(machine.handle(.error), context: context)
    }

    /// Does what the state machine asked. `handle` has returned before the first action runs, so
    /// a promise callback that comes back into this handler finds the machine consistent.
    private func perform(
        _ actions: consuming StateMachine.Actions,
        context: ChannelHandlerContext,
        sending request: APNsWireRequest? = nil
    ) {
        for action in actions {
            switch action {
            case .write(let streamID):
                guard let request else {
                    assertionFailure("the state machine opens a stream only for a request being sent")
                    continue
                }
                writeRequest(request, on: streamID, context: context)
            case .succeed(let promise, let response):
                promise.succeed(response)
            case .fail(let promise, let error):
                promise.fail(error)
            case .failAll(let promises, let error):
                for promise in promises { promise.fail(error) }
            case .expire(let expired):
                for stream in expired {
                    stream.request.fail(APNsClientError.timeout)
                    let reset = HTTP2Frame(streamID: stream.streamID, payload: .rstStream(.cancel))
                    context.write(wrapOutboundOut(reset), promise: nil)
                }
                context.flush()
            case .sendPing(let data):
                let ping = HTTP2Frame(
                    streamID: .rootStream,
                    payload: .ping(HTTP2PingData(withInteger: data), ack: false)
                )
                context.writeAndFlush(wrapOutboundOut(ping), promise: nil)
            case .closeChannel(let reason):
                switch reason {
                case .drained: logger.debug("APNs connection drained; closing")
                case .pingUnanswered: logger.debug("APNs connection did not answer PING; closing")
                case .error: break
                }
                context.close(promise: nil)
            case .startSweep:
                startSweeping(context: context)
            case .stopSweep:
                sweep?.cancel()
                sweep = nil
            case .tellPool(let event):
                onEvent(event)
            }
        }
    }

    private func writeRequest(_ request: APNsWireRequest, on streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        let notification = request.notification
        var headers = HPACKHeaders()
        headers.reserveCapacity(12)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: authority)
        headers.add(name: ":path", value: request.path, indexing: .nonIndexable)
        headers.add(name: APNsHeader.authorization, value: request.authorization)
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
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        sweep = context.eventLoop.scheduleRepeatedTask(initialDelay: Self.sweepInterval, delay: Self.sweepInterval) {
            _ in
            let (handler, context) = loopBound.value
            handler.perform(handler.machine.handle(.sweep(now: .now())), context: context)
        }
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

/// Why a connection was not made after TCP connected (the pool reports it as `connectFailed`).
struct HandshakeFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Completes when the TLS handshake does; fails if the channel closes or errs first (a handshake
/// longer than `timeout` closes it).
final class HandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let timeout: TimeAmount
    private var promise: EventLoopPromise<Void>?
    private var settled = false
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    /// Completes with the handshake (valid once the handler is in a pipeline).
    var done: EventLoopFuture<Void> { promise!.futureResult }

    func handlerAdded(context: ChannelHandlerContext) {
        promise = context.eventLoop.makePromise(of: Void.self)
        let channel = context.channel
        // Too slow a handshake closes the channel, which fails it.
        timer = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish(.failure(HandshakeFailure(message: "the connection closed before the TLS handshake finished")))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            finish(.success(()))
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(HandshakeFailure(message: "the connection closed before the TLS handshake finished")))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(HandshakeFailure(message: "TLS handshake: \(error)")))
        context.fireErrorCaught(error)
    }

    private func finish(_ result: Result<Void, any Error>) {
        // Once settled, later events (a close long after the handshake) change nothing.
        guard !settled else { return }
        settled = true
        timer?.cancel()
        timer = nil
        promise?.completeWith(result)
    }
}
