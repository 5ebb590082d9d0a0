import Foundation
import HeraldAPNs
import HeraldFCM
import HeraldHTTPSupport
import HeraldMacros
import HeraldProvider
import HeraldProviderHTTP
import HeraldStorePostgres
import Hummingbird
import Logging
import NIOPosix
import ServiceLifecycle

/// Where `herald provider` listens and keeps its secret and provider token.
@MemberwiseInit
public struct ProviderListener: Sendable, Hashable {
    public var host: String
    /// 0 picks a port.
    public var port: Int
    /// The bearer secret relays must send (HERALD_PROVIDER_SECRET wins); made here (0600) on first start.
    public var secretFile: String
    /// Where the provider token is kept (0600) so a restart reuses it.
    public var tokenCache: String
}

extension HeraldServer {
    /// `herald provider`: the provider stage (APNs and/or FCM, as configured) behind the batch
    /// API; runs until SIGTERM or SIGINT. `ready` gets the banner's lines once it listens.
    public func provider(listener: ProviderListener, ready: @escaping @Sendable ([String]) -> Void) async throws {
        let (shared, sharedDatabase) = try await sharedTokenStore()
        // The shared store runs around the provider's group: it stops after the clients.
        try await Self.withServices(shared.map { [$0] } ?? [], logger: logger) {
            try await provider(listener: listener, shared: shared, sharedDatabase: sharedDatabase, ready: ready)
        }
    }

    /// `herald provider` with its shared store (when it has one) running.
    private func provider(
        listener: ProviderListener,
        shared: PostgresStore?,
        sharedDatabase: String,
        ready: @escaping @Sendable ([String]) -> Void
    ) async throws {
        let registry = ServerMetrics.bootstrap()
        let group = MultiThreadedEventLoopGroup.singleton
        // The key first: a wrong key path should not leave a new secret file behind.
        let configuration = configuration
        let fleet = try ProviderClients.make(
            configuration: configuration,
            tokenCache: { configuration.providerTokenPath(for: $0, base: listener.tokenCache) },
            shared: shared,
            logger: logger,
            group: group
        )
        await fleet.prepare()
        // With tracing on, each push's attempt joins the trace the relay's claim sent with it; the
        // exporter starts first, so it stops last (docs/tracing.md).
        let tracing = try configuration.tracing?.makeBackend(logger: logger)
        let stage = tracing.map { fleet.stage.traced(by: $0.tracing) } ?? fleet.stage
        let keys = ServerKeys(keysDirectory: configuration.keysDirectory, environment: environment)
        let (secret, secretSource) = try keys.providerSecret(file: listener.secretFile, make: true)
        let ports = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: ProviderHTTPService.router(
                stage: stage,
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
                services: ((tracing.map { [$0.service] } ?? []) + fleet.services).map { .init(service: $0) } + [
                    .init(
                        service: NamedListener(
                            base: app,
                            listener: "the provider",
                            host: listener.host,
                            port: listener.port
                        )
                    )
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await services.run() }
            var bound = ports.stream.makeAsyncIterator()
            if let port = await bound.next() {
                ready(
                    Self.providerBanner(
                        configuration,
                        url: "http://\(listener.host):\(port)",
                        secretSource: secretSource,
                        sharedDatabase: sharedDatabase,
                        fcmProjectID: fleet.stage.fcm?.projectID
                    )
                )
            }
            try await tasks.next()
        }
    }

    /// Where the provider tokens are shared: several providers on one database share one provider
    /// token per key (in the store); alone (or without APNs), a provider keeps its token in the
    /// cache file. Answers the store and the database's description, or nil and "".
    private func sharedTokenStore() async throws -> (PostgresStore?, String) {
        guard !configuration.apnsKeys.isEmpty, case .postgres(let postgres) = configuration.database else {
            return (nil, "")
        }
        do {
            return (try await PostgresStore.open(configuration: postgres, logger: logger), "\(postgres)")
        } catch {
            throw HeraldServerError.startup(error.detail)
        }
    }

    /// `herald provider`'s start-up banner, once it listens at `url`.
    private static func providerBanner(
        _ configuration: HeraldConfiguration,
        url: String,
        secretSource: String,
        sharedDatabase: String,
        fcmProjectID: String?
    ) -> [String] {
        var lines = [
            "herald provider",
            "  listening    \(url)/v1/push/batch   (bearer secret in \(secretSource))",
        ]
        if let apns = configuration.apnsKeys.first {
            lines.append("  APNs         \(apns.url), \(apns.connections) connection(s)")
            for key in configuration.apnsKeys.dropFirst() {
                lines.append("  APNs key     \(key.name): team \(key.teamID), \(key.url)")
            }
            if !sharedDatabase.isEmpty {
                lines.append("  token        shared with the other providers on \(sharedDatabase)")
            }
        } else {
            lines.append("  APNs         off (no --apns-key)")
        }
        if let fcm = configuration.fcm, let fcmProjectID {
            lines.append("  FCM          \(fcm.url) (project \(fcmProjectID))")
        } else if !configuration.fcmAccounts.isEmpty {
            lines.append("  FCM          \(configuration.fcmAccounts.count) accounts")
        } else {
            lines.append("  FCM          off (no --fcm-service-account)")
        }
        return lines
    }
}
