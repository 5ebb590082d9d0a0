import Foundation
public import NIOCore
import NIOPosix
import Synchronization

/// A TCP connection that sends exactly the bytes it is given and reads back whatever comes, for
/// tests of what a server does with hostile HTTP: half a header block, two `Content-Length`
/// headers, one connection too many. Every wait has a deadline and fails past it, so a server
/// that never answers fails the test instead of hanging it.
public final class RawHTTPConnection: Sendable {
    /// One HTTP/1.1 answer as read off the wire.
    public struct Answer: Sendable {
        public var status: Int
        /// Header names lowercased; the last value of a repeated header.
        public var headers: [String: String]
        public var body: [UInt8]

        /// The body as a JSON object, when it is one.
        public var json: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        }
    }

    /// A wait passed its deadline, or the connection closed before what was awaited.
    public struct Timeout: Error, CustomStringConvertible {
        public let description: String
    }

    private let channel: any Channel
    private let inbox: Inbox

    private init(channel: any Channel, inbox: Inbox) {
        self.channel = channel
        self.inbox = inbox
    }

    /// Connects to `host:port`.
    public static func connect(host: String = "127.0.0.1", port: Int) async throws -> RawHTTPConnection {
        let inbox = Inbox()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Collector(inbox: inbox))
                }
            }
            .connect(host: host, port: port)
            .get()
        return RawHTTPConnection(channel: channel, inbox: inbox)
    }

    /// Sends `text` as it is (write `\r\n` where HTTP wants one).
    public func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text))
    }

    /// Reads one complete answer (head and a `Content-Length` body).
    public func answer(within deadline: Duration = .seconds(10)) async throws -> Answer {
        let inbox = inbox
        return try await Self.within(deadline, "an answer") {
            guard let answer = await inbox.take({ Self.parse($0, closed: $1) }) else {
                throw Timeout(description: "the connection closed before a complete answer")
            }
            return answer
        }
    }

    /// Waits until the server closes the connection and returns what it sent that was not read
    /// yet; fails if it is still open after `deadline`.
    public func closedByServer(within deadline: Duration = .seconds(10)) async throws -> [UInt8] {
        let inbox = inbox
        return try await Self.within(deadline, "the server to close the connection") {
            guard let rest = await inbox.take({ bytes, closed in closed ? (bytes, bytes.count) : nil }) else {
                throw CancellationError()
            }
            return rest
        }
    }

    /// Closes from this side.
    public func close() async {
        try? await channel.close()
    }

    private static func within<T: Sendable>(
        _ deadline: Duration,
        _ what: String,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        guard let value = try await withDeadline(deadline, body) else {
            throw Timeout(description: "no \(what) within \(deadline)")
        }
        return value
    }

    /// What came in, and who waits for more.
    private final class Inbox: Sendable {
        private struct State {
            var bytes: [UInt8] = []
            var closed = false
            var changed = false
            var waiter: CheckedContinuation<Void, Never>?
        }

        private let state = Mutex(State())

        func append(_ bytes: [UInt8]) {
            let waiter = state.withLock { state in
                state.bytes += bytes
                state.changed = true
                return state.waiter.take()
            }
            waiter?.resume()
        }

        func close() {
            let waiter = state.withLock { state in
                state.closed = true
                state.changed = true
                return state.waiter.take()
            }
            waiter?.resume()
        }

        /// Waits until `parse` finds what it wants at the start of the bytes (given whether the
        /// connection is closed) and removes what it used; nil once closed without it, or when
        /// cancelled.
        func take<T: Sendable>(_ parse: ([UInt8], Bool) -> (T, Int)?) async -> T? {
            while !Task.isCancelled {
                let found: T?? = state.withLock { state in
                    if let (value, used) = parse(state.bytes, state.closed) {
                        state.bytes.removeFirst(used)
                        return .some(value)
                    }
                    return state.closed ? .some(nil) : nil
                }
                if let found { return found }
                await changed()
            }
            return nil
        }

        private func changed() async {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = state.withLock { state -> Bool in
                        if state.changed || Task.isCancelled {
                            state.changed = false
                            return true
                        }
                        state.waiter = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                state.withLock { $0.waiter.take() }?.resume()
            }
        }
    }

    /// One answer from the start of `bytes` and how many bytes it took; nil while incomplete.
    static func parse(_ bytes: [UInt8], closed: Bool) -> (Answer, Int)? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = bytes.indices.dropLast(3).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else {
            return nil
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                .trimmingCharacters(in: .whitespaces)
        }
        let length = status == 101 ? 0 : Int(headers["content-length"] ?? "0") ?? 0
        let bodyStart = end + 4
        guard bytes.count >= bodyStart + length else { return nil }
        return (
            Answer(status: status, headers: headers, body: Array(bytes[bodyStart..<bodyStart + length])),
            bodyStart + length
        )
    }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer

        let inbox: Inbox

        init(inbox: Inbox) {
            self.inbox = inbox
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            inbox.append(Array(unwrapInboundIn(data).readableBytesView))
        }

        func channelInactive(context: ChannelHandlerContext) {
            inbox.close()
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // A reset after the server's answer: what came before is still read.
            context.close(promise: nil)
        }
    }
}
