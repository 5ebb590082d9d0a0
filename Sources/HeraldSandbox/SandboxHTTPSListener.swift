import HeraldHTTPSupport
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL

/// The sandbox's Hummingbird listeners over TLS (FCM, Web Push, Push Kit): HTTP/2 or HTTP/1.1 by
/// ALPN on the sandbox's certificate, under the configuration's connection limits.
///
/// Built on Hummingbird rather than at the frame level like the APNs listener: these services'
/// behaviour lives in their HTTP answers (status, JSON body, `Retry-After`), not in HTTP/2 frames.
enum SandboxHTTPSListener {
    /// Which push listener.
    enum Side: Hashable, Sendable {
        /// FCM HTTP v1 and Google's token endpoint, on `fcmPort`.
        case fcm
        /// The Web Push service, on `resolvedWebPushPort`, unreachable during its outages.
        case webPush
        /// Huawei Push Kit and its token endpoint, on `hmsPort`.
        case hms

        /// The port configured for it (0: a free one).
        func port(in configuration: SandboxConfiguration) -> Int {
            switch self {
            case .fcm: configuration.fcmPort
            case .webPush: configuration.resolvedWebPushPort
            case .hms: configuration.hmsPort
            }
        }

        /// Its name in errors: "the sandbox's <name> side".
        var name: String {
            switch self {
            case .fcm: "FCM"
            case .webPush: "Web Push"
            case .hms: "Push Kit"
            }
        }
    }

    /// The listener of `side` as a Hummingbird application. `onRunning` gets the bound port.
    static func application(
        _ side: Side,
        core: SandboxCore,
        group: any EventLoopGroup,
        logger: Logger,
        onRunning: @escaping @Sendable (Int) -> Void
    ) throws -> some ApplicationProtocol {
        let configuration = core.configuration
        let (router, outage): (Router<BasicRequestContext>, WebPushOutage?) =
            switch side {
            case .fcm: (SandboxFCMServer.router(core: core), nil)
            case .webPush: (SandboxWebPushServer.router(core: core), core.webPush.outage)
            case .hms: (SandboxHMSServer.router(core: core), nil)
            }
        return try application(
            router: router,
            configuration: configuration,
            port: side.port(in: configuration),
            outage: outage,
            group: group,
            logger: logger
        ) { port in
            // Web Push endpoints name the bound port, so the service learns it before any device.
            if side == .webPush { core.webPush.listening(port: port) }
            onRunning(port)
        }
    }

    /// `router` served on `port`; with `outage`, unreachable while one runs. `onRunning` gets
    /// the bound port.
    static func application(
        router: Router<BasicRequestContext>,
        configuration: SandboxConfiguration,
        port: Int,
        outage: WebPushOutage? = nil,
        group: any EventLoopGroup,
        logger: Logger,
        onRunning: @escaping @Sendable (Int) -> Void
    ) throws -> some ApplicationProtocol {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(configuration.tls.certificateChainPath).map {
                .certificate($0)
            },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: configuration.tls.privateKeyPath, format: .pem))
        )
        // RFC 9113 §9.2 requires TLS 1.2 or later for HTTP/2; HTTP/1.1 clients get the same floor.
        tls.minimumTLSVersion = .tlsv12
        let tlsConfiguration = tls
        return Application(
            router: router,
            server: .guarded(limits: configuration.http, encrypted: true) { responder in
                // Idle: an HTTP/2 connection without streams, an HTTP/1.1 one between requests.
                OutageChannel(
                    base: try HTTP2UpgradeChannel(
                        tlsConfiguration: tlsConfiguration,
                        configuration: .init(
                            idleTimeout: configuration.http.idleTimeout,
                            streamConfiguration: .init(idleTimeout: TimeAmount(configuration.http.idleTimeout))
                        ),
                        responder: responder
                    ),
                    outage: outage
                )
            },
            configuration: .init(address: .hostname(configuration.host, port: port), serverName: "herald-sandbox"),
            onServerRunning: { channel in onRunning(channel.localAddress?.port ?? port) },
            eventLoopGroupProvider: .shared(group),
            logger: logger
        )
    }
}

/// A child channel that is closed at once while its outage runs (never without one).
struct OutageChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    let outage: WebPushOutage?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let setup = base.setup(channel: channel, logger: logger)
        // Closed rather than failed: a failed setup would reach the server's accept loop.
        if let outage, !outage.admit(channel) { channel.close(promise: nil) }
        return setup
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension SandboxFCMAnswer {
    /// The answer as Hummingbird writes it, after its latency; `challenge` is the
    /// `WWW-Authenticate` value a 401 that asks for one carries.
    func response(challenge: String) async throws -> Response {
        if delay > .zero { try await Task.sleep(for: delay) }
        return immediateResponse(challenge: challenge)
    }

    /// The answer as Hummingbird writes it, without its latency (an error no route wrote).
    func immediateResponse(challenge: String? = nil) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=UTF-8"
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        if self.challenge, let challenge { headers[.wwwAuthenticate] = challenge }
        return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
