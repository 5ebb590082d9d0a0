import HeraldAPNsCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2

/// Asks a connection's handler to send GOAWAY and close.
struct GoAwayRequest: Sendable {
    let reason: APNsReason?
}

/// One APNs connection: assembles requests from HEADERS and DATA frames, asks the emulator, and
/// answers on the stream.
final class APNsConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let emulator: APNsEmulator
    private let maxConcurrentStreams: Int
    private let connections: NIOLockedValueBox<[ObjectIdentifier: any Channel]>
    private let identity: ClientCertificateBox
    private let goAwayAtOnce: Bool
    /// The listener's outage: a connection still open when one began (its close is on its way)
    /// processes nothing more.
    private let outage: NIOLockedValueBox<NIODeadline?>?
    private let logger: Logger
    private var state = SandboxConnectionState()
    private var requests: [HTTP2StreamID: SandboxAPNsRequest] = [:]
    private var raisedStreamLimit = false
    private var lastStreamID = HTTP2StreamID.rootStream
    private var needsFlush = false
    /// Set once GOAWAY is sent: streams up to `goAwayLastStreamID` are still answered, then the
    /// connection closes.
    private var closing = false
    private var goAwayLastStreamID = HTTP2StreamID.rootStream
    /// Answers waiting on injected latency.
    private var delayedResponses = 0
    /// The PING that closes a drained connection once acknowledged has been sent.
    private var drainPingSent = false

    init(
        emulator: APNsEmulator,
        maxConcurrentStreams: Int,
        connections: NIOLockedValueBox<[ObjectIdentifier: any Channel]>,
        identity: ClientCertificateBox,
        goAwayAtOnce: Bool = false,
        outage: NIOLockedValueBox<NIODeadline?>? = nil,
        environment: APNsEnvironment = .development,
        logger: Logger
    ) {
        state = SandboxConnectionState(environment: environment)
        self.goAwayAtOnce = goAwayAtOnce
        self.outage = outage
        self.emulator = emulator
        self.maxConcurrentStreams = maxConcurrentStreams
        self.connections = connections
        self.identity = identity
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        connections.withLockedValue { $0[ObjectIdentifier(channel)] = channel }
        if context.channel.isActive {
            openConnectionWindow(context: context)
            if goAwayAtOnce { goAway(context: context, lastStreamID: .rootStream, reason: nil) }
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        openConnectionWindow(context: context)
        context.fireChannelActive()
        // Written after the SETTINGS the HTTP/2 handler sent on activation; TLS holds both until
        // its handshake is done.
        if goAwayAtOnce { goAway(context: context, lastStreamID: .rootStream, reason: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let channel = context.channel
        connections.withLockedValue { $0[ObjectIdentifier(channel)] = nil }
        requests.removeAll()
        context.fireChannelInactive()
    }

    /// The connection window the sandbox keeps open (`APNsConnectionWindow`): requests are small,
    /// so a large window lets a provider keep hundreds of streams in flight.
    private func openConnectionWindow(context: ChannelHandlerContext) {
        writeWindowUpdate(APNsConnectionWindow.opening, context: context)
    }

    private func writeWindowUpdate(_ increment: Int, context: ChannelHandlerContext) {
        context.writeAndFlush(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
            promise: nil
        )
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let streamID = frame.streamID
        switch frame.payload {
        case .headers(let headers):
            if requests[streamID] != nil {
                // Trailers: nothing in them matters to APNs.
                if headers.endStream, let request = requests.removeValue(forKey: streamID) {
                    process(request, on: streamID, context: context)
                }
                return
            }
            if streamID > lastStreamID { lastStreamID = streamID }
            let request = Self.request(from: headers.headers)
            if headers.endStream {
                process(request, on: streamID, context: context)
            } else {
                requests[streamID] = request
            }
        case .data(let data):
            guard requests[streamID] != nil else { return }
            if case .byteBuffer(let buffer) = data.data {
                requests[streamID]!.append(buffer)
            }
            if data.endStream, let request = requests.removeValue(forKey: streamID) {
                process(request, on: streamID, context: context)
            } else if requests[streamID]!.bodyTruncated {
                // Too large: nothing more is kept, but the stream window is reopened so the client
                // can finish sending and then read the 413. (Answering early with RST_STREAM is
                // allowed by RFC 9113, but common clients report it as an error, not as the 413.)
                let size = data.data.readableBytes + (data.paddingBytes ?? 0)
                if size > 0 {
                    let update = HTTP2Frame(streamID: streamID, payload: .windowUpdate(windowSizeIncrement: size))
                    context.write(wrapOutboundOut(update), promise: nil)
                    needsFlush = true
                }
            }
        case .rstStream:
            requests[streamID] = nil
        case .ping(let data, ack: true) where closing && data == Self.drainPing:
            // The client has read every answer before this PING: closing now cannot make its
            // TCP stack discard them (a close with the client's later requests unread is a reset,
            // and a reset drops what the client had received but not yet read).
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let event as NIOHTTP2WindowUpdatedEvent where event.streamID == .rootStream:
            if let increment = APNsConnectionWindow.topUp(inbound: event.inboundWindowSize) {
                writeWindowUpdate(increment, context: context)
            }
        case let event as StreamClosedEvent:
            requests[event.streamID] = nil
        case let event as IdleStateHandler.IdleStateEvent where event == .all:
            goAway(context: context, lastStreamID: lastStreamID, reason: .idleTimeout)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if let request = event as? GoAwayRequest {
            goAway(context: context, lastStreamID: lastStreamID, reason: request.reason)
            promise?.succeed()
        } else {
            context.triggerUserOutboundEvent(event, promise: promise)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A stream error (a stream opened after GOAWAY, say) has been answered with RST_STREAM by
        // the HTTP/2 stack; the connection and the answers it owes stay.
        if error is NIOHTTP2Errors.StreamError { return }
        // Garbage TLS, malformed HTTP/2, protocol violations: the connection goes, the process stays.
        logger.debug("closing APNs connection after error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    private func process(_ request: SandboxAPNsRequest, on streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        guard !closing || streamID <= goAwayLastStreamID else { return }
        if let until = outage?.withLockedValue({ $0 }), NIODeadline.now() < until {
            // Unreachable: nothing is read, as if the connection had already gone.
            context.close(promise: nil)
            return
        }
        defer { if closing { closeIfDrained(context: context) } }
        if state.clientCertificate == nil { state.clientCertificate = identity.value }
        let outcome = emulator.handle(request, connection: &state)
        if state.authenticated, !raisedStreamLimit {
            raisedStreamLimit = true
            let settings: HTTP2Settings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams)]
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings(settings)))),
                promise: nil
            )
            needsFlush = true
        }
        switch outcome {
        case .respond(let response, let delay):
            if delay == .zero {
                write(response, on: streamID, context: context)
                needsFlush = true
            } else {
                delayedResponses += 1
                let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: TimeAmount(delay)) {
                    let (handler, context) = loopBound.value
                    handler.delayedResponses -= 1
                    guard context.channel.isActive else { return }
                    handler.write(response, on: streamID, context: context)
                    context.flush()
                    if handler.closing { handler.closeIfDrained(context: context) }
                }
            }
        case .drop:
            context.close(promise: nil)
        case .goaway(let reason):
            // This stream is refused on its own (REFUSED_STREAM: not processed, safe to send again)
            // and the GOAWAY covers every stream already opened, which are still answered.
            // Streams complete in the order their DATA arrives, not in id order (a client's HTTP/2
            // stack emits buffered DATA in any stream order), so a lower last stream id could
            // disown a stream already answered; and the HTTP/2 stack treats DATA for a stream a
            // GOAWAY dropped as a connection error, which would lose the answers owed.
            let refuse = HTTP2Frame(streamID: streamID, payload: .rstStream(.refusedStream))
            context.write(wrapOutboundOut(refuse), promise: nil)
            needsFlush = true
            goAway(context: context, lastStreamID: lastStreamID, reason: reason)
        case .stall:
            break
        }
    }

    private func write(_ response: SandboxAPNsResponse, on streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        var headers = HPACKHeaders()
        headers.reserveCapacity(4)
        headers.add(name: ":status", value: String(response.status))
        headers.add(name: APNsHeader.id, value: response.apnsID)
        if let uniqueID = response.uniqueID { headers.add(name: APNsHeader.uniqueID, value: uniqueID) }
        let body = response.body
        if body != nil { headers.add(name: "content-type", value: "application/json") }
        let head = HTTP2Frame.FramePayload.headers(.init(headers: headers, endStream: body == nil))
        context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: head)), promise: nil)
        if let body {
            var buffer = context.channel.allocator.buffer(capacity: body.count)
            buffer.writeBytes(body)
            let data = HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(buffer), endStream: true))
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: data)), promise: nil)
        }
    }

    private func goAway(context: ChannelHandlerContext, lastStreamID: HTTP2StreamID, reason: APNsReason?) {
        guard !closing else { return }
        closing = true
        goAwayLastStreamID = lastStreamID
        var debugData: ByteBuffer?
        if let reason {
            debugData = context.channel.allocator.buffer(string: #"{"reason":"\#(reason.rawValue)"}"#)
        }
        let frame = HTTP2Frame(
            streamID: .rootStream,
            payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: debugData)
        )
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        // Whatever happens to the streams still owed an answer (a stalled one, a client that never
        // finished its request or its TLS handshake), the connection goes: within ten seconds
        // when answers are pending, one second otherwise.
        let owed = delayedResponses > 0 || !requests.isEmpty
        let channel = context.channel
        context.eventLoop.scheduleTask(in: .seconds(owed ? 10 : 1)) { channel.close(promise: nil) }
        closeIfDrained(context: context)
    }

    /// After GOAWAY: once every stream up to the GOAWAY's last stream id has its answer, sends a
    /// PING and closes when the client acknowledges it, that is once the client has read every
    /// answer (or at the GOAWAY's fallback timer, for a client that never does).
    private func closeIfDrained(context: ChannelHandlerContext) {
        guard !drainPingSent, delayedResponses == 0, !requests.keys.contains(where: { $0 <= goAwayLastStreamID })
        else { return }
        drainPingSent = true
        let ping = HTTP2Frame(streamID: .rootStream, payload: .ping(Self.drainPing, ack: false))
        context.writeAndFlush(wrapOutboundOut(ping), promise: nil)
    }

    /// The PING that ends a drained connection.
    private static let drainPing = HTTP2PingData(withInteger: 0x6865_7261_6C64_0001)

    /// The APNs headers a request carries at most once each, and the field each fills.
    private static let singleHeaders:
        [(name: String, field: any WritableKeyPath<SandboxAPNsRequest, String?> & Sendable)] =
            [
                (APNsHeader.authorization, \.authorization),
                (APNsHeader.topic, \.topic),
                (APNsHeader.pushType, \.pushType),
                (APNsHeader.priority, \.priority),
                (APNsHeader.expiration, \.expiration),
                (APNsHeader.collapseID, \.collapseID),
                (APNsHeader.id, \.apnsID),
            ]

    private static func request(from headers: HPACKHeaders) -> SandboxAPNsRequest {
        var request = SandboxAPNsRequest()
        // One bit per entry of `singleHeaders`: set once the header was seen.
        var seen: UInt16 = 0
        for (name, value, _) in headers {
            switch name {
            case ":method": request.method = value
            case ":path": request.path = value
            default:
                guard let index = singleHeaders.firstIndex(where: { $0.name == name }) else { continue }
                let bit: UInt16 = 1 << index
                if seen & bit != 0 { request.duplicateHeaders = true }
                seen |= bit
                request[keyPath: singleHeaders[index].field] = value
            }
        }
        return request
    }
}

extension SandboxAPNsRequest {
    mutating func append(_ buffer: ByteBuffer) {
        let room = Self.bodyCapacity - body.count
        if buffer.readableBytes > room { bodyTruncated = true }
        if room > 0 { body.append(contentsOf: buffer.readableBytesView.prefix(room)) }
    }
}
