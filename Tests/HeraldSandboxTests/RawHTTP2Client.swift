import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Testing

/// A frame-level HTTP/2 client over TLS, for what a high-level client hides: SETTINGS values,
/// GOAWAY debug data, duplicate headers, floods of streams.
///
/// Each connection has a deadline: still open then, it is closed and the test fails, so a loop
/// over `frames` waiting for a frame that never comes ends instead of hanging.
final class RawHTTP2Client: Sendable {
    let channel: any Channel
    /// Every frame the server sent, in order; ends when the connection closes (or at the deadline).
    let frames: AsyncStream<HTTP2Frame>

    private init(channel: any Channel, frames: AsyncStream<HTTP2Frame>) {
        self.channel = channel
        self.frames = frames
    }

    /// - Parameter deadline: how long the connection may stay open; longer fails the test.
    static func connect(port: Int, caPath: String, deadline: Duration = .seconds(20)) async throws -> RawHTTP2Client {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(caPath)
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let (frames, continuation) = AsyncStream.makeStream(of: HTTP2Frame.self)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                    try sync.addHandler(
                        NIOHTTP2Handler(
                            mode: .client,
                            initialSettings: [HTTP2Setting(parameter: .maxConcurrentStreams, value: 100)],
                            headerBlockValidation: .disabled
                        )
                    )
                    try sync.addHandler(FrameCollector(continuation: continuation))
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        // Made from the test's task, the watchdog records its issue against that test.
        let watchdog = Task {
            try await Task.sleep(for: deadline)
            guard channel.isActive else { return }
            Issue.record("the raw HTTP/2 connection was still open \(deadline) after it was made")
            try? await channel.close()
        }
        channel.closeFuture.whenComplete { _ in watchdog.cancel() }
        return RawHTTP2Client(channel: channel, frames: frames)
    }

    /// Sends a request on `streamID` (odd, increasing).
    func send(streamID: Int, headers: [(String, String)], body: String?) async throws {
        var block = HPACKHeaders()
        for (name, value) in headers { block.add(name: name, value: value) }
        let head = HTTP2Frame(
            streamID: HTTP2StreamID(streamID),
            payload: .headers(.init(headers: block, endStream: body == nil))
        )
        channel.write(head, promise: nil)
        if let body {
            let data = HTTP2Frame(
                streamID: HTTP2StreamID(streamID),
                payload: .data(.init(data: .byteBuffer(ByteBuffer(string: body)), endStream: true))
            )
            channel.write(data, promise: nil)
        }
        try await channel.writeAndFlush(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(), ack: false)))
    }

    /// Sends only a request's HEADERS (not ending the stream), so its DATA can come later.
    func sendHeaders(streamID: Int, headers: [(String, String)]) async throws {
        var block = HPACKHeaders()
        for (name, value) in headers { block.add(name: name, value: value) }
        let head = HTTP2Frame(streamID: HTTP2StreamID(streamID), payload: .headers(.init(headers: block)))
        try await channel.writeAndFlush(head)
    }

    /// Sends a request's DATA, ending the stream.
    func sendData(streamID: Int, body: String) async throws {
        let data = HTTP2Frame(
            streamID: HTTP2StreamID(streamID),
            payload: .data(.init(data: .byteBuffer(ByteBuffer(string: body)), endStream: true))
        )
        try await channel.writeAndFlush(data)
    }

    func close() async {
        try? await channel.close()
    }

    static func requestHeaders(
        path: String,
        token: String?,
        topic: String = SandboxHarness.bundleID
    ) -> [(String, String)] {
        var headers = [
            (":method", "POST"), (":scheme", "https"), (":authority", "localhost"), (":path", path),
            ("apns-topic", topic),
            ("apns-push-type", "alert"),
        ]
        if let token { headers.append(("authorization", "bearer \(token)")) }
        return headers
    }
}

private final class FrameCollector: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTP2Frame
    let continuation: AsyncStream<HTTP2Frame>.Continuation

    init(continuation: AsyncStream<HTTP2Frame>.Continuation) {
        self.continuation = continuation
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        continuation.yield(unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        continuation.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        continuation.finish()
        context.close(promise: nil)
    }
}

extension HTTP2Frame.FramePayload {
    /// The value of MAX_CONCURRENT_STREAMS in a SETTINGS frame (not an ACK), if present.
    var maxConcurrentStreams: Int? {
        guard case .settings(.settings(let settings)) = self else { return nil }
        return settings.last { $0.parameter == .maxConcurrentStreams }?.value
    }

    /// The status of a HEADERS frame.
    var status: String? {
        guard case .headers(let headers) = self else { return nil }
        return headers.headers.first(name: ":status")
    }
}
