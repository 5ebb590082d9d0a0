import HeraldAPNsCore
import Hummingbird
import HummingbirdWebSocket
public import Logging
public import NIOCore
public import NIOPosix
public import ServiceLifecycle
import Synchronization

/// Where a running sandbox listens.
public struct SandboxEndpoints: Sendable, Hashable {
    /// The APNs base URL, `https://<host>:<port>`: give it to a provider with the CA file.
    public var apnsURL: String
    public var apnsPort: Int
    /// The control and device API, `http://<host>:<port>`.
    public var controlURL: String
    public var controlPort: Int
    /// The CA certificate clients must trust.
    public var caCertificatePath: String
}

/// The sandbox as a service: the APNs listener and the control API, under a `ServiceGroup`.
///
/// Graceful shutdown answers new pushes 503 Shutdown, sends GOAWAY `Shutdown` on every APNs
/// connection, ends device connections and stops both listeners.
public final class Sandbox: Service, Sendable {
    /// The sandbox's state: also usable in-process, as tests do.
    public let core: SandboxCore
    private let apns: SandboxAPNsServer
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
        self.logger = logger
        self.group = group
    }

    /// Waits until both listeners are bound and returns where they are.
    public func endpoints() async throws -> SandboxEndpoints {
        try await ready.wait()
    }

    /// The APNs listener, for fault injection at the connection level.
    public var apnsServer: SandboxAPNsServer { apns }

    public func run() async throws {
        let configuration = core.configuration
        let apnsPort: Int
        do {
            apnsPort = try await apns.start()
        } catch {
            ready.fail(error)
            throw error
        }
        let router = SandboxControlAPI.router(core: core, apns: apns)
        let ready = ready
        let host = configuration.host
        let caPath = configuration.tls.caCertificatePath
        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(webSocketRouter: router),
            configuration: .init(
                address: .hostname(host, port: configuration.controlPort),
                serverName: "herald-sandbox"
            ),
            onServerRunning: { channel in
                let controlPort = channel.localAddress?.port ?? configuration.controlPort
                let urlHost = host.contains(":") ? "[\(host)]" : host
                ready.succeed(
                    SandboxEndpoints(
                        apnsURL: "https://\(urlHost):\(apnsPort)",
                        apnsPort: apnsPort,
                        controlURL: "http://\(urlHost):\(controlPort)",
                        controlPort: controlPort,
                        caCertificatePath: caPath
                    )
                )
            },
            eventLoopGroupProvider: .shared(group),
            logger: logger
        )
        do {
            try await withGracefulShutdownHandler {
                try await app.run()
            } onGracefulShutdown: { [apns, core] in
                core.finishStreams()
                Task { await apns.shutdown() }
            }
        } catch {
            ready.fail(error)
            await apns.shutdown()
            core.finishStreams()
            throw error
        }
        await apns.shutdown()
        core.finishStreams()
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
