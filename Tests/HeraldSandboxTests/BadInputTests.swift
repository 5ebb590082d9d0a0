import AsyncHTTPClient
import Foundation
import HeraldSandbox
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import Testing

/// What a hostile or broken client can throw at the APNs port: each gets Apple's answer or a
/// closed connection, and the sandbox keeps serving.
@Suite(.timeLimit(.minutes(2))) struct BadInputTests {
    /// A TCP connection (optionally TLS with ALPN h2) that writes raw bytes and reports when the
    /// server closes it.
    final class RawSocket: Sendable {
        let channel: any Channel
        let closed: EventLoopFuture<Void>

        static func connect(port: Int, tlsCA: String? = nil) async throws -> RawSocket {
            let context: NIOSSLContext? = try tlsCA.map { ca in
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.trustRoots = .file(ca)
                tls.applicationProtocols = ["h2"]
                return try NIOSSLContext(configuration: tls)
            }
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let context {
                            try channel.pipeline.syncOperations.addHandler(
                                NIOSSLClientHandler(context: context, serverHostname: "localhost")
                            )
                        }
                    }
                }
                .connect(host: "127.0.0.1", port: port)
                .get()
            return RawSocket(channel: channel)
        }

        private init(channel: any Channel) {
            self.channel = channel
            closed = channel.closeFuture
        }

        func write(_ bytes: [UInt8]) async throws {
            try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
        }

        /// Waits for the server to close the connection; records an issue if it has not after
        /// `seconds` (and closes it then, so the test ends).
        func waitUntilClosedByServer(seconds: Int64 = 10) async throws {
            let channel = channel
            let gaveUp = NIOLockedValueBox(false)
            let timeout = channel.eventLoop.scheduleTask(in: .seconds(seconds)) {
                gaveUp.withLockedValue { $0 = true }
                channel.close(promise: nil)
            }
            try? await closed.get()
            timeout.cancel()
            #expect(!gaveUp.withLockedValue { $0 }, "the server did not close the connection")
        }
    }

    /// A valid push still succeeds: the sandbox survived.
    func stillServes(_ sandbox: SandboxHarness) async throws {
        let token = try #require(try sandbox.device().messagingToken)
        #expect(try await sandbox.push(to: token).status == 200)
    }

    @Test func garbageInsteadOfTLSIsClosed() async throws {
        try await SandboxHarness.with { sandbox in
            let socket = try await RawSocket.connect(port: sandbox.endpoints.apnsPort)
            var generator = SystemRandomNumberGenerator()
            try await socket.write((0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) })
            try await socket.waitUntilClosedByServer()
            #expect(!socket.channel.isActive)
            try await stillServes(sandbox)
        }
    }

    @Test func plaintextHTTP1IsClosed() async throws {
        try await SandboxHarness.with { sandbox in
            let socket = try await RawSocket.connect(port: sandbox.endpoints.apnsPort)
            try await socket.write(Array("POST /3/device/abc HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            try await socket.waitUntilClosedByServer()
            #expect(!socket.channel.isActive)
            try await stillServes(sandbox)
        }
    }

    @Test func http1InsideTLSIsClosed() async throws {
        try await SandboxHarness.with { sandbox in
            let socket = try await RawSocket.connect(
                port: sandbox.endpoints.apnsPort,
                tlsCA: sandbox.endpoints.caCertificatePath
            )
            try await socket.write(Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
            try await socket.waitUntilClosedByServer()
            #expect(!socket.channel.isActive)
            try await stillServes(sandbox)
        }
    }

    @Test func oversizedHeadersCloseTheConnection() async throws {
        try await SandboxHarness.with { sandbox in
            let raw = try await RawHTTP2Client.connect(
                port: sandbox.endpoints.apnsPort,
                caPath: sandbox.endpoints.caCertificatePath
            )
            var headers = RawHTTP2Client.requestHeaders(path: "/3/device/abc", token: sandbox.token.text)
            headers.append(("x-padding", String(repeating: "p", count: 64 * 1024)))
            try? await raw.send(streamID: 1, headers: headers, body: #"{"aps":{}}"#)
            var answeredOK = false
            for await frame in raw.frames where frame.streamID == 1 && frame.payload.status == "200" {
                answeredOK = true
            }
            #expect(!answeredOK)
            try await stillServes(sandbox)
        }
    }

    @Test func aClientThatNeverSendsIsClosedAfterTheIdleTimeout() async throws {
        try await SandboxHarness.with(SandboxHarness.Setup { $0.idleTimeout = .seconds(1) }) { sandbox in
            let silent = try await RawSocket.connect(port: sandbox.endpoints.apnsPort)
            try await silent.waitUntilClosedByServer()
            #expect(!silent.channel.isActive)

            // An HTTP/2 client that goes quiet gets GOAWAY IdleTimeout first.
            let raw = try await RawHTTP2Client.connect(
                port: sandbox.endpoints.apnsPort,
                caPath: sandbox.endpoints.caCertificatePath
            )
            var reason: String?
            for await frame in raw.frames {
                if case .goAway(_, _, let data) = frame.payload { reason = data.map { String(buffer: $0) } }
            }
            #expect(reason == #"{"reason":"IdleTimeout"}"#)
        }
    }

    @Test func aFloodOfStreamsIsRefusedAndTheSandboxKeepsServing() async throws {
        try await SandboxHarness.with { sandbox in
            let socket = try await RawSocket.connect(
                port: sandbox.endpoints.apnsPort,
                tlsCA: sandbox.endpoints.caCertificatePath
            )
            var bytes = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
            bytes += Self.frame(type: 0x4, flags: 0, stream: 0, payload: [])  // empty SETTINGS
            // :method POST, :scheme https, :path /, :authority localhost (HPACK, RFC 7541 appendix A).
            let block: [UInt8] = [0x83, 0x87, 0x84, 0x41, 0x09] + Array("localhost".utf8)
            for index in 0..<2_000 {
                bytes += Self.frame(type: 0x1, flags: 0x4, stream: UInt32(1 + 2 * index), payload: block)
            }
            try? await socket.write(bytes)
            try await socket.waitUntilClosedByServer()
            try await stillServes(sandbox)
        }
    }

    @Test func aHugeBodyGets413WithoutBeingBuffered() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            let huge = String(repeating: "x", count: 1 << 20)
            let reply = try await sandbox.push(to: token, payload: #"{"aps":{"alert":"\#(huge)"}}"#)
            #expect(reply.status == 413)
            #expect(reply.reason == "PayloadTooLarge")
            let record = try #require(sandbox.core.inspection().last)
            #expect(record.payload.utf8.count <= SandboxAPNsRequest.bodyCapacity)
            try await stillServes(sandbox)
        }
    }

    static func frame(type: UInt8, flags: UInt8, stream: UInt32, payload: [UInt8]) -> [UInt8] {
        let length = UInt32(payload.count)
        return [
            UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags,
            UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF),
        ] + payload
    }
}
