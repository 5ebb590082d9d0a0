public import HeraldAPNsCore
import HeraldHTTPSupport
public import Logging
import NIOConcurrencyHelpers
public import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import X509

/// The APNs listener: HTTP/2 over TLS (ALPN `h2`), `POST /3/device/<token>`.
///
/// Built on swift-nio-http2 at the frame level rather than on an HTTP framework, because APNs
/// behaviour lives at that level: the stream limit that rises after the first valid provider
/// token, GOAWAY frames with a JSON reason, and connections dropped on purpose for fault
/// injection. Frame-level handling also avoids a child channel per stream, which matters for the
/// 30,000 requests per second the sandbox must sustain.
public final class SandboxAPNsServer: Sendable {
    private let core: SandboxCore
    private let sslContext: NIOSSLContext
    /// The CA client certificates are checked against (certificate-based connections).
    private let clientCA: Certificate?
    private let group: any EventLoopGroup
    private let logger: Logger
    private let connections = NIOLockedValueBox<[ObjectIdentifier: any Channel]>([:])
    private let serverChannel = NIOLockedValueBox<(any Channel)?>(nil)
    /// Until when the listener plays an unreachable APNs (an outage), if it does.
    private let outage = NIOLockedValueBox<NIODeadline?>(nil)
    /// How many of the next connections get GOAWAY as soon as they open.
    private let goAwayOnOpen = NIOLockedValueBox(0)
    /// The APNs environment this listener plays: it accepts that environment's device tokens only.
    public let environment: APNsEnvironment

    /// A listener for `core`, with the TLS identity of `core`'s configuration, playing
    /// `environment` (on `apnsPort` for development, `apnsProductionPort` for production).
    public init(
        core: SandboxCore,
        group: any EventLoopGroup,
        environment: APNsEnvironment = .development,
        logger: Logger
    ) throws {
        self.environment = environment
        self.core = core
        self.group = group
        self.logger = logger
        let tls = core.configuration.tls
        var tlsConfiguration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(tls.certificateChainPath).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: tls.privateKeyPath, format: .pem))
        )
        tlsConfiguration.applicationProtocols = ["h2"]
        // Apple refuses TLS 1.0 and 1.1, and RFC 9113 §9.2 requires TLS 1.2 or later for HTTP/2.
        tlsConfiguration.minimumTLSVersion = .tlsv12
        // Ask for a client certificate without requiring one: providers use either a provider
        // token or a certificate, as with Apple. The sandbox judges certificates itself, so that
        // a bad one is answered 403 BadCertificate rather than a failed handshake.
        tlsConfiguration.certificateVerification = .optionalVerification
        sslContext = try NIOSSLContext(configuration: tlsConfiguration)
        clientCA = try? Certificate(pemEncoded: String(contentsOfFile: tls.caCertificatePath, encoding: .utf8))
    }

    /// Binds and starts accepting connections; returns the bound port.
    public func start() async throws -> Int {
        let configuration = core.configuration
        let port = environment == .production ? configuration.apnsProductionPort ?? 0 : configuration.apnsPort
        let listener = environment == .production ? "the sandbox's APNs side (production)" : "the sandbox's APNs side"
        let channel = try await ListenerError.naming(listener, host: configuration.host, port: port) {
            try await bind(port: port)
        }
        serverChannel.withLockedValue { $0 = channel }
        return channel.localAddress?.port ?? port
    }

    private func bind(port: Int) async throws -> any Channel {
        let configuration = core.configuration
        let sslContext = sslContext
        let clientCA = clientCA
        let core = core
        let connections = connections
        let logger = logger
        let outage = outage
        let goAwayOnOpen = goAwayOnOpen
        let environment = environment
        return try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                if let until = outage.withLockedValue({ $0 }), NIODeadline.now() < until {
                    // Unreachable: the connection closes before TLS starts (a failed initializer
                    // closes it), so the client's handshake fails as against a host that is down.
                    return channel.eventLoop.makeFailedFuture(SandboxOutage())
                }
                let goAwayAtOnce = goAwayOnOpen.withLockedValue { count in
                    guard count > 0 else { return false }
                    count -= 1
                    return true
                }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    let identity = ClientCertificateBox()
                    try sync.addHandler(
                        NIOSSLServerHandler(context: sslContext) { certificates, promise in
                            let chain = certificates.compactMap { try? $0.toDERBytes() }
                            identity.value = SandboxCertificateAuthority.classify(chainDER: chain, ca: clientCA)
                            promise.succeed(.certificateVerified)
                        }
                    )
                    if let idle = configuration.idleTimeout {
                        try sync.addHandler(IdleStateHandler(allTimeout: TimeAmount(idle)))
                    }
                    try sync.addHandler(
                        NIOHTTP2Handler(
                            mode: .server,
                            initialSettings: [
                                // One stream until a valid provider token arrives, as Apple does.
                                HTTP2Setting(parameter: .maxConcurrentStreams, value: 1),
                                HTTP2Setting(parameter: .maxHeaderListSize, value: 8192),
                                HTTP2Setting(parameter: .initialWindowSize, value: 65_535),
                            ]
                        )
                    )
                    try sync.addHandler(
                        APNsConnectionHandler(
                            emulator: core.apns,
                            maxConcurrentStreams: configuration.maxConcurrentStreams,
                            connections: connections,
                            identity: identity,
                            goAwayAtOnce: goAwayAtOnce,
                            outage: outage,
                            environment: environment,
                            logger: logger
                        )
                    )
                }
            }
            .bind(host: configuration.host, port: port)
            .get()
    }

    /// The number of open connections.
    public var connectionCount: Int { connections.withLockedValue { $0.count } }

    /// Sends GOAWAY (with `reason` as JSON debug data) on every open connection and closes them.
    public func goAwayAll(reason: APNsReason?) {
        for channel in connections.withLockedValue({ Array($0.values) }) {
            channel.triggerUserOutboundEvent(GoAwayRequest(reason: reason), promise: nil)
        }
    }

    /// The next `count` connections get GOAWAY (`NO_ERROR`, last stream 0, no debug data) as
    /// soon as they open, right after the server's SETTINGS: a server going away while a client
    /// is still setting the connection up.
    public func goAwayNewConnections(_ count: Int) {
        goAwayOnOpen.withLockedValue { $0 = max(0, count) }
    }

    /// Plays an APNs that cannot be reached for `duration`: every open connection is closed at
    /// once (without GOAWAY), and each new one is closed as soon as it is accepted, before the
    /// TLS handshake, until the time is up. A new outage replaces the one running.
    public func beUnreachable(for duration: TimeAmount) {
        outage.withLockedValue { $0 = .now() + duration }
        dropAll()
    }

    /// Ends an outage now (nothing happens without one).
    public func endOutage() {
        outage.withLockedValue { $0 = nil }
    }

    /// Whether an outage is running.
    public var isUnreachable: Bool {
        outage.withLockedValue { until in until.map { NIODeadline.now() < $0 } ?? false }
    }

    /// Closes every open connection at once, without GOAWAY: a lost connection.
    public func dropAll() {
        for channel in connections.withLockedValue({ Array($0.values) }) {
            channel.close(promise: nil)
        }
    }

    /// Stops accepting, answers new requests 503 Shutdown, sends GOAWAY `Shutdown`, closes.
    public func shutdown() async {
        core.beginShutdown()
        let server = serverChannel.withLockedValue { channel in
            defer { channel = nil }
            return channel
        }
        try? await server?.close()
        goAwayAll(reason: .shutdown)
    }
}

/// Why a connection accepted during an outage is closed.
struct SandboxOutage: Error {}

/// The client certificate verdict of one connection: written by the TLS handler's verification
/// callback and read by the connection handler, both on the connection's event loop.
final class ClientCertificateBox: @unchecked Sendable {
    var value: SandboxClientCertificate?
}

extension TimeAmount {
    init(_ duration: Duration) {
        self = .nanoseconds(duration.nanoseconds)
    }
}
