import Foundation
import HeraldAPNs
import HeraldFCM
import HeraldHTTPSupport
import HeraldProvider
import HeraldProviderHTTP
import HeraldStorePostgres
import Hummingbird
import Logging
import NIOPosix
import ServiceLifecycle

/// Where `herald provider` listens and keeps its secret and provider token.
public struct ProviderListener: Sendable, Hashable {
    public var host: String
    /// 0 picks a port.
    public var port: Int
    /// The bearer secret relays must send (HERALD_PROVIDER_SECRET wins); made here (0600) on first start.
    public var secretFile: String
    /// Where the provider token is kept (0600) so a restart reuses it.
    public var tokenCache: String

    public init(host: String, port: Int, secretFile: String, tokenCache: String) {
        self.host = host
        self.port = port
        self.secretFile = secretFile
        self.tokenCache = tokenCache
    }
}

extension HeraldServer {
    /// `herald provider`: the provider stage (APNs and/or FCM, as configured) behind the batch
    /// API; runs until SIGTERM or SIGINT. `ready` gets the banner's lines once it listens.
    public func provider(listener: ProviderListener, ready: @escaping @Sendable ([String]) -> Void) async throws {
        let registry = ServerMetrics.bootstrap()
        let group = MultiThreadedEventLoopGroup.singleton
        // Several providers on one database share one provider token per key (in the store);
        // alone, a provider keeps its token in the cache file.
        var shared: PostgresStore?
        var sharedDatabase = ""
        if configuration.apns != nil, case .postgres(let postgres) = configuration.database {
            sharedDatabase = "\(postgres)"
            do {
                shared = try await PostgresStore.open(configuration: postgres, logger: logger)
            } catch {
                throw HeraldServerError.startup(error.detail)
            }
        }
        // The key first: a wrong key path should not leave a new secret file behind.
        let made = try configuration.apns.map { apns in
            try APNsSettings(
                key: apns.key,
                keyID: apns.keyID,
                teamID: apns.teamID,
                url: apns.url,
                caFile: apns.ca,
                connections: apns.connections,
                requestTimeout: Int(apns.requestTimeout.components.seconds),
                tokenCache: listener.tokenCache
            ).makeClient(logger: logger, group: group, shared: shared)
        }
        let client = made?.0
        let sharedToken = made?.2
        await sharedToken?.prepare()
        let fcmClient = try configuration.fcm.map {
            try FCMSettings(serviceAccount: $0.serviceAccount, url: $0.url, caFile: $0.ca)
                .makeClient(logger: logger, group: group)
        }
        let keys = ServerKeys(keysDirectory: configuration.keysDirectory, environment: environment)
        let (secret, secretSource) = try keys.providerSecret(file: listener.secretFile, make: true)
        let ports = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: ProviderHTTPService.router(
                stage: ProviderStage(apns: client, fcm: fcmClient),
                secret: secret,
                registry: registry,
                accessLogger: configuration.accessLogger
            ),
            server: .guardedHTTP1(limits: configuration.http),
            configuration: .init(address: .hostname(listener.host, port: listener.port), serverName: "herald-provider"),
            onServerRunning: { channel in ports.continuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        let services = ServiceGroup(
            configuration: .init(
                services: ([client, fcmClient, sharedToken] as [(any Service)?]).compactMap { $0 }
                    .map { .init(service: $0) }
                    + [.init(service: app)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        let configuration = configuration
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await services.run() }
            var bound = ports.stream.makeAsyncIterator()
            if let port = await bound.next() {
                var lines = [
                    "herald provider",
                    "  listening    http://\(listener.host):\(port)/v1/push/batch   (bearer secret in \(secretSource))",
                ]
                if let apns = configuration.apns {
                    lines.append("  APNs         \(apns.url), \(apns.connections) connection(s)")
                    if !sharedDatabase.isEmpty {
                        lines.append("  token        shared with the other providers on \(sharedDatabase)")
                    }
                } else {
                    lines.append("  APNs         off (no --apns-key)")
                }
                if let fcm = configuration.fcm, let fcmClient {
                    lines.append("  FCM          \(fcm.url) (project \(fcmClient.projectID))")
                } else {
                    lines.append("  FCM          off (no --fcm-service-account)")
                }
                ready(lines)
            }
            try await tasks.next()
        }
    }
}
