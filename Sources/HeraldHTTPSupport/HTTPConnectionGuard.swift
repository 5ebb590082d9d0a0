import Foundation
import NIOCore
import NIOHTTP1
import NIOTLS
import Synchronization

/// How many connections one listener holds, shared by its connections' guards.
final class ConnectionCount: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes a place; false when every place is taken.
    func enter() -> Bool {
        if open.add(1, ordering: .relaxed).newValue <= limit { return true }
        open.subtract(1, ordering: .relaxed)
        return false
    }

    func leave() {
        open.subtract(1, ordering: .relaxed)
    }

    var current: Int { open.load(ordering: .relaxed) }
}

/// The first handler of every guarded connection, on its bytes: counts the connection against
/// the listener's cap (one too many is answered 503 and closed before anything is read), and
/// runs the header-read timer that `ExchangeMachine` decides about (a head that is not complete
/// in time is answered 408 and the connection closed).
///
/// On a TLS listener the guard sits right after the TLS handler: it closes a connection over the
/// cap without an answer, and one whose handshake is not complete within the header-read
/// timeout; after the handshake the channel's own idle timeouts bound it.
final class HTTPConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let limits: HTTPConnectionLimits
    private let connections: ConnectionCount
    /// HTTP/1 in clear: answers can be written here, and `HTTPExchangeWatcher` reports heads.
    private let plaintext: Bool
    private var machine = ExchangeMachine()
    private var activated = false
    private var counted = false
    /// Refused (over the cap or too slow): what still comes in is dropped.
    private var refused = false
    private var timer: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    init(limits: HTTPConnectionLimits, connections: ConnectionCount, plaintext: Bool) {
        self.limits = limits
        self.connections = connections
        self.plaintext = plaintext
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { activate(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        activate(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if counted {
            counted = false
            connections.leave()
        }
        perform(machine.closed(), context)
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !plaintext, let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            perform(machine.handshakeCompleted(), context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        if plaintext { perform(machine.bytesRead(), context) }
        context.fireChannelRead(data)
    }

    private func activate(_ context: ChannelHandlerContext) {
        guard !activated else { return }
        activated = true
        guard connections.enter() else {
            refuse(
                context,
                status: "503 Service Unavailable",
                error: "unavailable",
                reason: "the server holds \(connections.limit) connections, its limit; try again shortly"
            )
            return
        }
        counted = true
        perform(machine.opened(), context)
    }

    // MARK: What HTTPExchangeWatcher reports

    func headReceived() {
        guard let context else { return }
        perform(machine.headReceived(), context)
    }

    func responseEnded() {
        guard let context else { return }
        perform(machine.responseEnded(), context)
    }

    func upgraded() {
        guard let context else { return }
        perform(machine.upgraded(), context)
    }

    /// Whether an answer may be written without cutting into another response.
    var mayAnswer: Bool { machine.mayAnswer }

    /// The connection is being closed by an answer of the watcher's.
    func closing() {
        guard let context else { return }
        refused = true
        perform(machine.closed(), context)
    }

    // MARK: Actions

    private func perform(_ action: ExchangeMachine.Action, _ context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .startTimer:
            timer?.cancel()
            timer = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(limits.headerReadTimeout)) {
                [weak self] in
                guard let self, let context = self.context else { return }
                self.timer = nil
                self.perform(self.machine.timerFired(), context)
            }
        case .stopTimer:
            timer?.cancel()
            timer = nil
        case .refuseSlowHead:
            timer = nil
            refuse(
                context,
                status: "408 Request Timeout",
                error: "request_timeout",
                reason: "the request head was not complete within \(Self.seconds(limits.headerReadTimeout))"
            )
        }
    }

    /// Answers (in clear only) and closes; nothing more is read.
    private func refuse(_ context: ChannelHandlerContext, status: String, error: String, reason: String) {
        refused = true
        guard plaintext else {
            context.close(promise: nil)
            return
        }
        let answer = Self.answer(status: status, error: error, reason: reason)
        context.writeAndFlush(wrapOutboundOut(answer)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// A complete HTTP/1.1 answer with the JSON error body, closing the connection.
    static func answer(status: String, error: String, reason: String) -> ByteBuffer {
        let body = JSONResponse.errorJSON(error: error, reason: reason, field: nil)
        var text = "HTTP/1.1 \(status)\r\ncontent-type: application/json\r\n"
        text += "content-length: \(body.utf8.count)\r\nconnection: close\r\n\r\n"
        return ByteBuffer(string: text + body)
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if attoseconds == 0 { return "\(seconds) s" }
        return String(format: "%.3g s", Double(seconds) + Double(attoseconds) / 1e18)
    }
}

@available(*, unavailable)
extension HTTPConnectionGuard: Sendable {}
