import HeraldSandbox
import NIOCore
import NIOPosix
import NIOSSL
import Testing

/// Both TLS listeners refuse TLS 1.1 and older, as Apple does and RFC 9113 §9.2 asks of HTTP/2.
@Suite(.timeLimit(.minutes(1)))
struct TLSVersionTests {
    enum Listener: String, CaseIterable, CustomTestStringConvertible {
        case apns, fcm

        var testDescription: String { rawValue }

        func port(_ endpoints: SandboxEndpoints) -> Int {
            switch self {
            case .apns: endpoints.apnsPort
            case .fcm: endpoints.fcmPort
            }
        }
    }

    /// The handshake ended without completing.
    struct HandshakeFailed: Error {}

    /// Completes `done` with the negotiated version once the server's first bytes arrive (an
    /// HTTP/2 server speaks first, with its SETTINGS, and only over a completed handshake), or
    /// fails it when the connection errs or closes first.
    final class HandshakeWatcher: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer

        private let done: EventLoopPromise<TLSVersion?>
        private var settled = false

        init(done: EventLoopPromise<TLSVersion?>) {
            self.done = done
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if !settled {
                settled = true
                done.succeed(try? context.pipeline.syncOperations.nioSSL_tlsVersion())
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            if !settled {
                settled = true
                done.fail(error)
            }
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            if !settled {
                settled = true
                done.fail(HandshakeFailed())
            }
            context.fireChannelInactive()
        }
    }

    /// The TLS version a client offering at most `maximum` negotiates with the listener on
    /// `port`; throws when the handshake fails.
    static func handshake(port: Int, caPath: String, maximum: TLSVersion) async throws -> TLSVersion? {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(caPath)
        tls.minimumTLSVersion = .tlsv1
        tls.maximumTLSVersion = maximum
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let group = MultiThreadedEventLoopGroup.singleton
        let done = group.any().makePromise(of: TLSVersion?.self)
        let channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                    try sync.addHandler(HandshakeWatcher(done: done))
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        do {
            let version = try await done.futureResult.get()
            try? await channel.close()
            return version
        } catch {
            try? await channel.close()
            throw error
        }
    }

    @Test(arguments: Listener.allCases)
    func aTLS11ClientIsRefused(listener: Listener) async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            await #expect(throws: (any Error).self) {
                try await Self.handshake(
                    port: listener.port(sandbox.endpoints),
                    caPath: sandbox.endpoints.caCertificatePath,
                    maximum: .tlsv11
                )
            }
        }
    }

    @Test(arguments: Listener.allCases)
    func aTLS12ClientIsServed(listener: Listener) async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let version = try await Self.handshake(
                port: listener.port(sandbox.endpoints),
                caPath: sandbox.endpoints.caCertificatePath,
                maximum: .tlsv12
            )
            #expect(version == .tlsv12)
        }
    }
}
