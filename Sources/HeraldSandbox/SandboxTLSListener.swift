import HeraldHTTPSupport
import Hummingbird
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL

/// What the sandbox's Hummingbird push listeners (FCM, Push Kit) share: TLS on the APNs
/// listener's identity with ALPN `h2` and `http/1.1`, the configured connection limits, and
/// writing an emulator's answer.
enum SandboxTLSListener {
    /// Which push listener.
    enum Side {
        /// FCM HTTP v1 and Google's token endpoint, on `fcmPort`.
        case fcm
        /// Huawei Push Kit and its token endpoint, on `hmsPort`.
        case hms
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
        let (router, port) =
            switch side {
            case .fcm: (SandboxFCMServer.router(core: core), configuration.fcmPort)
            case .hms: (SandboxHMSServer.router(core: core), configuration.hmsPort)
            }
        return try application(
            router: router,
            port: port,
            configuration: configuration,
            group: group,
            logger: logger,
            onRunning: onRunning
        )
    }

    /// `router` served on `port` over TLS with the sandbox's certificate. `onRunning` gets the
    /// bound port.
    static func application(
        router: Router<BasicRequestContext>,
        port: Int,
        configuration: SandboxConfiguration,
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
                try HTTP2UpgradeChannel(
                    tlsConfiguration: tlsConfiguration,
                    configuration: .init(
                        idleTimeout: configuration.http.idleTimeout,
                        streamConfiguration: .init(idleTimeout: TimeAmount(configuration.http.idleTimeout))
                    ),
                    responder: responder
                )
            },
            configuration: .init(address: .hostname(configuration.host, port: port), serverName: "herald-sandbox"),
            onServerRunning: { channel in onRunning(channel.localAddress?.port ?? port) },
            eventLoopGroupProvider: .shared(group),
            logger: logger
        )
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
