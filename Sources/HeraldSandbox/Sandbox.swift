import HeraldAPNsCore
import HeraldHTTPSupport
import Hummingbird
import HummingbirdWebSocket
public import Logging
import NIOConcurrencyHelpers
public import NIOCore
public import NIOPosix
public import ServiceLifecycle
import Synchronization

/// Where a running sandbox listens.
public struct SandboxEndpoints: Sendable, Hashable {
    /// The APNs base URL, `https://<host>:<port>`: give it to a provider with the CA file.
    public var apnsURL: String
    public var apnsPort: Int
    /// APNs' production environment's base URL, when the sandbox plays it
    /// (`apnsProductionPort`): only production device tokens are accepted there, and only
    /// development ones at `apnsURL`.
    public var apnsProductionURL: String?
    public var apnsProductionPort: Int?
    /// The control and device API, `http://<host>:<port>`.
    public var controlURL: String
    public var controlPort: Int
    /// The FCM HTTP v1 base URL, `https://<host>:<port>`: messages go to
    /// `<fcmURL>/v1/projects/{project}/messages:send`.
    public var fcmURL: String
    public var fcmPort: Int
    /// The OAuth2 token endpoint, `https://<host>:<port>/token`: a service account's `token_uri`.
    public var tokenURL: String
    /// The Web Push service, `https://<host>:<port>`: browsers' subscription endpoints are
    /// `<webPushURL>/wp/<id>`.
    public var webPushURL: String
    public var webPushPort: Int
    /// The Push Kit base URL, `https://<host>:<port>`: messages go to
    /// `<hmsURL>/v1/{appId}/messages:send`.
    public var hmsURL: String
    public var hmsPort: Int
    /// Push Kit's OAuth 2.0 token endpoint, `https://<host>:<port>/oauth2/v3/token`: a Huawei
    /// app's token URL.
    public var hmsTokenURL: String
    /// The CA certificate clients must trust (for APNs, FCM, Web Push and Push Kit).
    public var caCertificatePath: String
}

/// The sandbox as a service: the APNs listener, the FCM listener, the Web Push listener and the
/// control API, under a `ServiceGroup`.
///
/// Graceful shutdown answers new pushes 503 Shutdown (APNs) or 503 UNAVAILABLE (FCM), sends
/// GOAWAY on every APNs and FCM connection, ends device connections and stops the listeners.
public final class Sandbox: Service, Sendable {
    /// The sandbox's state: also usable in-process, as tests do.
    public let core: SandboxCore
    private let apns: SandboxAPNsServer
    /// APNs' production environment, when configured.
    private let apnsProduction: SandboxAPNsServer?
    private let logger: Logger
    private let group: any EventLoopGroup
    private let ready = ReadySignal<SandboxEndpoints>()

    public init(
        configuration: SandboxConfiguration,
        logger: Logger,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws {
        core = try SandboxCore(configuration: configuration)
        apns = try SandboxAPNsServer(core: core, group: group, logger: logger)
        apnsProduction =
            configuration.apnsProductionPort == nil
            ? nil : try SandboxAPNsServer(core: core, group: group, environment: .production, logger: logger)
        self.logger = logger
        self.group = group
    }

    /// Waits until every listener is bound and returns where they are.
    public func endpoints() async throws -> SandboxEndpoints {
        try await ready.wait()
    }

    /// The APNs listener, for fault injection at the connection level.
    public var apnsServer: SandboxAPNsServer { apns }
    /// The production environment's APNs listener, when the sandbox plays it.
    public var apnsProductionServer: SandboxAPNsServer? { apnsProduction }

    public func run() async throws {
        let (apnsPort, productionPort) = try await startAPNs()
        let report = portReporter(apnsPort: apnsPort, productionPort: productionPort)
        let app = controlApplication(report: report)
        var pushListeners: [(SandboxHTTPSListener.Side, any ApplicationProtocol)] = []
        do {
            for side in [SandboxHTTPSListener.Side.fcm, .webPush, .hms] {
                let listener = try SandboxHTTPSListener.application(side, core: core, group: group, logger: logger) {
                    report(.push(side), $0)
                }
                pushListeners.append((side, listener))
            }
        } catch {
            ready.fail(error)
            await apns.shutdown()
            await apnsProduction?.shutdown()
            throw error
        }
        do {
            try await serve(control: app, push: pushListeners)
        } catch {
            ready.fail(error)
            await apns.shutdown()
            await apnsProduction?.shutdown()
            core.finishStreams()
            throw error
        }
        await apns.shutdown()
        await apnsProduction?.shutdown()
        core.finishStreams()
    }

    /// Starts the APNs listeners: their ports (the production one's when the sandbox plays it).
    private func startAPNs() async throws -> (apns: Int, production: Int?) {
        do {
            return (try await apns.start(), try await apnsProduction?.start())
        } catch {
            ready.fail(error)
            await apns.shutdown()
            throw error
        }
    }

    /// The Hummingbird listeners, each reporting its port once it runs.
    enum Listener: Hashable {
        case control
        case push(SandboxHTTPSListener.Side)
    }

    /// What each Hummingbird listener calls with its port once it runs: the sandbox is ready
    /// once all have reported theirs.
    private func portReporter(apnsPort: Int, productionPort: Int?) -> @Sendable (Listener, Int) -> Void {
        let ready = ready
        let host = core.configuration.host
        let caPath = core.configuration.tls.caCertificatePath
        let bound = NIOLockedValueBox<[Listener: Int]>([:])
        return { listener, port in
            let ports = bound.withLockedValue { ports -> (control: Int, fcm: Int, webPush: Int, hms: Int)? in
                ports[listener] = port
                guard let control = ports[.control], let fcm = ports[.push(.fcm)],
                    let webPush = ports[.push(.webPush)], let hms = ports[.push(.hms)]
                else { return nil }
                return (control, fcm, webPush, hms)
            }
            guard let ports else { return }
            let urlHost = host.contains(":") ? "[\(host)]" : host
            ready.succeed(
                SandboxEndpoints(
                    apnsURL: "https://\(urlHost):\(apnsPort)",
                    apnsPort: apnsPort,
                    apnsProductionURL: productionPort.map { "https://\(urlHost):\($0)" },
                    apnsProductionPort: productionPort,
                    controlURL: "http://\(urlHost):\(ports.control)",
                    controlPort: ports.control,
                    fcmURL: "https://\(urlHost):\(ports.fcm)",
                    fcmPort: ports.fcm,
                    tokenURL: "https://\(urlHost):\(ports.fcm)/token",
                    webPushURL: "https://\(urlHost):\(ports.webPush)",
                    webPushPort: ports.webPush,
                    hmsURL: "https://\(urlHost):\(ports.hms)",
                    hmsPort: ports.hms,
                    hmsTokenURL: "https://\(urlHost):\(ports.hms)/oauth2/v3/token",
                    caCertificatePath: caPath
                )
            )
        }
    }

    /// The control API's application (HTTP and its WebSocket streams).
    private func controlApplication(
        report: @escaping @Sendable (Listener, Int) -> Void
    ) -> some ApplicationProtocol {
        let configuration = core.configuration
        let router = SandboxControlAPI.router(core: core, apns: apns, logger: logger)
        return Application(
            router: router,
            server: .guardedHTTP1WebSocketUpgrade(webSocketRouter: router, limits: configuration.http),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.controlPort),
                serverName: "herald-sandbox"
            ),
            onServerRunning: { channel in
                report(.control, channel.localAddress?.port ?? configuration.controlPort)
            },
            eventLoopGroupProvider: .shared(group),
            logger: logger
        )
    }

    /// Runs the control API, the FCM side and the Push Kit side until a graceful shutdown, or until one of them
    /// fails.
    private func serve(
        control app: some ApplicationProtocol,
        push: [(SandboxHTTPSListener.Side, any ApplicationProtocol)]
    ) async throws {
        let configuration = core.configuration
        let host = configuration.host
        let apns = apns
        let apnsProduction = apnsProduction
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { listeners in
                // The APNs listeners (NIO, not Hummingbird) send GOAWAY as soon as the shutdown
                // begins, while the control API and the FCM, Web Push and Push Kit sides finish theirs.
                listeners.addTask { [core] in
                    guard (try? await gracefulShutdown()) != nil else { return }
                    // Set by the handler below too, whichever hears of the shutdown first.
                    core.beginShutdown()
                    await apns.shutdown()
                    await apnsProduction?.shutdown()
                }
                listeners.addTask {
                    try await ListenerError.naming(
                        "the sandbox's control API",
                        host: host,
                        port: configuration.controlPort
                    ) { try await app.run() }
                }
                for (side, listener) in push {
                    let port = side.port(in: configuration)
                    listeners.addTask {
                        try await ListenerError.naming("the sandbox's \(side.name) side", host: host, port: port) {
                            try await listener.run()
                        }
                    }
                }
                do {
                    while try await listeners.next() != nil {}
                } catch {
                    // One listener failed (a port in use): the other must stop too, and
                    // `waitForAll` would wait for it instead of cancelling it.
                    listeners.cancelAll()
                    throw error
                }
            }
        } onGracefulShutdown: { [core] in
            // From now on FCM sends get 503 UNAVAILABLE and APNs pushes 503 Shutdown.
            core.beginShutdown()
            core.finishStreams()
        }
    }
}

/// A value that becomes available once, awaited by any number of tasks.
final class ReadySignal<Value: Sendable>: Sendable {
    private enum State {
        case waiting([CheckedContinuation<Value, any Error>])
        case done(Result<Value, any Error>)
    }

    private let state = Mutex<State>(.waiting([]))

    func wait() async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            let result: Result<Value, any Error>? = state.withLock { state in
                switch state {
                case .waiting(var waiters):
                    waiters.append(continuation)
                    state = .waiting(waiters)
                    return nil
                case .done(let result):
                    return result
                }
            }
            if let result { continuation.resume(with: result) }
        }
    }

    func succeed(_ value: Value) { complete(.success(value)) }
    func fail(_ error: any Error) { complete(.failure(error)) }

    private func complete(_ result: Result<Value, any Error>) {
        let waiters: [CheckedContinuation<Value, any Error>] = state.withLock { state in
            guard case .waiting(let waiters) = state else { return [] }
            state = .done(result)
            return waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }
}
