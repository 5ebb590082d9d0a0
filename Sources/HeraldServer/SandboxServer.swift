import Foundation
public import HeraldSandbox
public import Logging
import NIOPosix
import ServiceLifecycle

extension HeraldServer {
    /// `herald sandbox`: the APNs and FCM look-alike on its own, until SIGTERM or SIGINT. `ready`
    /// gets the banner's lines once every listener is bound.
    public static func sandbox(
        _ configuration: SandboxConfiguration,
        threads: Int,
        logger: Logger,
        ready: @escaping @Sendable ([String]) -> Void
    ) async throws {
        var configuration = configuration
        configuration.metrics = configuration.metrics ?? ServerMetrics.bootstrap()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let sandbox = try Sandbox(configuration: configuration, logger: logger, group: group)
        let services = ServiceGroup(
            configuration: .init(
                services: [.init(service: sandbox)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await services.run() }
            let endpoints = try await sandbox.endpoints()
            let accounts = configuration.serviceAccounts.map { "\($0.clientEmail) (project \($0.projectID))" }
            ready(
                [
                    "herald sandbox",
                    "  APNs         \(endpoints.apnsURL)   (HTTP/2 + TLS, trust \(endpoints.caCertificatePath))",
                ] + (endpoints.apnsProductionURL.map { ["  APNs prod    \($0)   (production device tokens)"] } ?? [])
                    + [
                        "  FCM          \(endpoints.fcmURL)   (HTTP/2 + TLS, /v1/projects/{project}/messages:send)",
                        "  FCM tokens   \(endpoints.tokenURL)   (a service account's token_uri)",
                        "  Web Push     \(endpoints.webPushURL)   (HTTPS, POST /wp/{subscription}, VAPID)",
                        "  control API  \(endpoints.controlURL)/sandbox   (docs/sandbox.md)",
                        "  apps         \(configuration.apps.map { "\($0.bundleID) (team \($0.teamID))" }.joined(separator: ", "))",
                        "  keys         \(configuration.keys.map { "\($0.keyID) (team \($0.teamID))" }.joined(separator: ", "))",
                        "  accounts     \(accounts.joined(separator: ", "))",
                        "  devices      \(configuration.registryFile ?? "in memory (--data DIR keeps them across restarts)")",
                    ]
            )
            try await tasks.next()
        }
        try? await group.shutdownGracefully()
    }
}
