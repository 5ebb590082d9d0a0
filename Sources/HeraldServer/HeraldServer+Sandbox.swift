import Foundation
import HeraldAPNs
import HeraldCrypto
import HeraldFCMCore
import HeraldPush
import HeraldRelay
import HeraldSandbox
import HeraldStore
import NIOPosix
import Prometheus
import ServiceLifecycle

/// `herald serve` without an Apple key: the sandbox in process, and the relay sending to it.
extension HeraldServer {
    /// No Apple key: the sandbox runs in process, with a development key and FCM service account
    /// registered in it.
    func serveWithSandbox(
        store: any HeraldStore,
        secrets: Secrets,
        registry: PrometheusCollectorRegistry,
        ready: @escaping @Sendable ([String]) -> Void
    ) async throws {
        let (metadata, accountPath, account, sandboxConfiguration) = try sandboxSetup()
        let vapidKeys = try sandboxVAPIDKeys()
        let huawei = try sandboxHMSApp()
        var signing = configuration
        signing.vapidKeys = vapidKeys
        let webPushLines = signing.webPushBannerLines
        var sandboxSettings = sandboxConfiguration
        sandboxSettings.hmsApps = [SandboxHMSApp(appID: huawei.app.appID, clientSecret: huawei.secret)]
        sandboxSettings.hmsPort = configuration.sandboxPorts.apns == 2197 ? 2193 : 0
        let sandbox = try Sandbox(configuration: sandboxSettings, logger: logger)
        let logger = logger
        let configuration = configuration
        // The sandbox runs around the relay's group: it stops after the provider's clients.
        try await Self.withServices([sandbox], logger: logger) {
            let endpoints = try await sandbox.endpoints()
            let group = MultiThreadedEventLoopGroup.singleton
            let (apns, fcm) = sandboxClients(endpoints, metadata: metadata, accountPath: accountPath)
            let clients = try ProviderClients.make(
                apnsKeys: [apns],
                fcmAccounts: [fcm],
                fcmTokenURI: endpoints.tokenURL,
                vapidKeys: vapidKeys,
                webPush: WebPushSettings(ca: endpoints.caCertificatePath, allowPrivateEndpoints: true),
                hmsApps: [huawei.app.sending(to: endpoints)],
                shared: store,
                logger: logger,
                group: group
            )
            var runtime = try sandboxRuntime(
                vapidKeys: vapidKeys,
                store: store,
                masterKey: secrets.masterKey,
                apiKey: secrets.apiKey,
                sender: clients.stage,
                registry: registry,
                sandbox: sandbox,
                teamID: metadata.teamID
            )
            if runtime.node.console != nil {
                runtime.consoleLine = try await Self.firstOperator(
                    store: store,
                    configuration: configuration,
                    now: WallClock().now()
                )
            }
            let started = runtime
            let shown = try await Self.registerApps(started, in: sandbox, teamID: metadata.teamID)
            await clients.prepare()
            let reloader = reloader(started, defaultTeam: metadata.teamID)
            try await started.run(providers: clients.services, listeners: reloader) { port in
                var lines = started.banner(
                    "herald serve (sandbox mode: no Apple key configured, pushes go to the in-process sandbox)",
                    port: port,
                    apps: shown,
                    secrets: secrets
                )
                lines += Self.sandboxLines(
                    endpoints,
                    registry: configuration.sandboxRegistryPath,
                    metadata: metadata,
                    account: account,
                    accountPath: accountPath
                )
                lines += webPushLines
                lines.append(
                    "  Push Kit     app \(DevelopmentKeys.developmentHMSAppID) (\(endpoints.hmsURL), secret keys/hms-client.secret)"
                )
                ready(lines)
            }
        }
    }

    /// The relay over `sender` as the sandbox mode runs it: the development key and account are
    /// the fleet's only ones, and every app saved is registered in the sandbox too.
    private func sandboxRuntime(
        vapidKeys: [HeraldConfiguration.VAPID],
        store: any HeraldStore,
        masterKey: MasterKey,
        apiKey: String,
        sender: any PushSender,
        registry: PrometheusCollectorRegistry,
        sandbox: Sandbox,
        teamID: String
    ) throws -> RelayRuntime {
        var fleet = FleetConfiguration()
        fleet.apnsKeys = [HeraldConfiguration.defaultName]
        fleet.fcmAccounts = [HeraldConfiguration.defaultName]
        fleet.defaultAPNsEnvironment = .development
        var withKeys = configuration
        withKeys.vapidKeys = vapidKeys
        fleet.applicationServerKeys = withKeys.fleetConfiguration(knowsCredentials: false).applicationServerKeys
        // The sandbox's push service mints endpoints on loopback.
        fleet.allowPrivateWebPushEndpoints = true
        return try RelayRuntime(
            configuration: configuration,
            store: store,
            masterKey: masterKey,
            apiKey: apiKey,
            sender: sender,
            platforms: [.ios, .android, .web, .huawei],
            fleet: fleet,
            registry: registry,
            logger: logger,
            // The sandbox stands in for Apple with the development key: every app is the
            // development team's there, whatever team it names for production.
            onAppSaved: { app in
                try? sandbox.core.register(app: SandboxApp(bundleID: app.id, teamID: teamID))
            },
            console: console(sandbox: sandbox),
            environment: environment
        )
    }

    /// Registers the configured apps (an example app when there are none) with the relay and the
    /// sandbox; answers the relay's apps, for the banner.
    private static func registerApps(
        _ runtime: RelayRuntime,
        in sandbox: Sandbox,
        teamID: String
    ) async throws -> [AppRecord] {
        _ = try await runtime.registerApps(defaultTeam: teamID)
        if try await runtime.relay.activation.apps().isEmpty {
            try await runtime.relay.activation.saveApp(AppRecord(id: "com.example.herald", teamID: teamID))
        }
        let shown = try await runtime.relay.activation.apps()
        for app in shown {
            try? sandbox.core.register(app: SandboxApp(bundleID: app.id, teamID: teamID))
        }
        return shown
    }

    /// The sandbox mode's Huawei app: the configured default one's id and secret file, else the
    /// development app (keys/hms-client.secret, made on first use); the sandbox knows it too.
    private func sandboxHMSApp() throws -> (app: HeraldConfiguration.HMS, secret: String) {
        let app: HeraldConfiguration.HMS
        do {
            app =
                try configuration.hmsApps.first
                ?? HeraldConfiguration.HMS(
                    name: HeraldConfiguration.defaultName,
                    appID: DevelopmentKeys.developmentHMSAppID,
                    clientSecretFile: DevelopmentKeys.developmentHMSSecret(in: configuration.keysDirectory)
                )
        } catch {
            throw HeraldServerError.credentials("\(error)")
        }
        return (app, try app.credentials().clientSecret)
    }

    /// The VAPID keys of the sandbox mode: the configured ones, else the development key
    /// (keys/vapid.pem, made on first use) as `default`.
    private func sandboxVAPIDKeys() throws -> [HeraldConfiguration.VAPID] {
        guard configuration.vapidKeys.isEmpty else { return configuration.vapidKeys }
        let path: String
        do {
            path = try DevelopmentKeys.developmentVAPIDKey(in: configuration.keysDirectory)
        } catch {
            throw HeraldServerError.credentials("\(error)")
        }
        return [
            HeraldConfiguration.VAPID(
                name: HeraldConfiguration.defaultName,
                key: path,
                subject: "mailto:operator@herald.invalid"
            )
        ]
    }

    /// The in-process sandbox's configuration, with the development APNs key and FCM service
    /// account it trusts (made under the keys directory on first use).
    private func sandboxSetup() throws -> (APNsKeyMetadata, String, FCMServiceAccount, SandboxConfiguration) {
        let keysDirectory = configuration.keysDirectory
        let metadata: APNsKeyMetadata
        let accountPath: String
        let account: FCMServiceAccount
        var sandboxConfiguration: SandboxConfiguration
        do {
            metadata = try DevelopmentKeys.developmentAPNsKey(in: keysDirectory)
            accountPath =
                try configuration.fcm?.serviceAccount
                ?? DevelopmentKeys.developmentServiceAccount(in: keysDirectory)
            account = try FCMServiceAccount.load(path: accountPath)
            sandboxConfiguration = SandboxConfiguration(
                tls: try SandboxCertificateAuthority.ensure(directory: keysDirectory)
            )
            sandboxConfiguration.serviceAccounts = [try SandboxServiceAccount(account)]
        } catch let error as HeraldServerError {
            throw error
        } catch {
            throw HeraldServerError.credentials("\(error)")
        }
        sandboxConfiguration.host = "127.0.0.1"
        sandboxConfiguration.apnsPort = configuration.sandboxPorts.apns
        sandboxConfiguration.apnsProductionPort = SandboxConfiguration.productionPort(
            configuration.sandboxPorts.apnsProduction,
            apnsPort: configuration.sandboxPorts.apns
        )
        sandboxConfiguration.controlPort = configuration.sandboxPorts.control
        // No /metrics on the control port: the sandbox runs in this process, its series are on
        // the relay's /metrics already, and a scrape of both would count everything twice.
        sandboxConfiguration.metrics = nil
        sandboxConfiguration.fcmPort = configuration.sandboxPorts.fcm
        sandboxConfiguration.webPushPort = configuration.sandboxPorts.webPush
        sandboxConfiguration.registryFile = configuration.sandboxRegistryPath
        sandboxConfiguration.keys = [
            SandboxKey(keyID: metadata.keyID, teamID: metadata.teamID, publicKeyPEM: metadata.publicKeyPEM)
        ]
        return (metadata, accountPath, account, sandboxConfiguration)
    }

    /// The APNs key and FCM account settings that send to the in-process sandbox: one key for
    /// both environments (the sandbox plays development and production on two ports).
    private func sandboxClients(
        _ endpoints: SandboxEndpoints,
        metadata: APNsKeyMetadata,
        accountPath: String
    ) -> (HeraldConfiguration.APNs, HeraldConfiguration.FCM) {
        var urls: [APNsEnvironment: String] = [.development: endpoints.apnsURL]
        urls[.production] = endpoints.apnsProductionURL
        let apns = HeraldConfiguration.APNs(
            key: (configuration.keysDirectory as NSString).appendingPathComponent("AuthKey_\(metadata.keyID).p8"),
            keyID: metadata.keyID,
            teamID: metadata.teamID,
            environment: APNsEnvironment.development.rawValue,
            url: endpoints.apnsURL,
            urls: urls,
            ca: endpoints.caCertificatePath,
            connections: 2,
            requestTimeout: .seconds(10)
        )
        let fcm = HeraldConfiguration.FCM(
            serviceAccount: accountPath,
            url: endpoints.fcmURL,
            ca: endpoints.caCertificatePath
        )
        return (apns, fcm)
    }

    /// The sandbox's lines of `herald serve`'s start-up banner.
    private static func sandboxLines(
        _ endpoints: SandboxEndpoints,
        registry: String,
        metadata: APNsKeyMetadata,
        account: FCMServiceAccount,
        accountPath: String
    ) -> [String] {
        var lines = [
            "  sandbox      APNs \(endpoints.apnsURL)   FCM \(endpoints.fcmURL)   control \(endpoints.controlURL)/sandbox"
        ]
        if let production = endpoints.apnsProductionURL {
            lines.append("  sandbox      APNs production \(production)   (production device tokens)")
        }
        lines.append("  sandbox      Web Push \(endpoints.webPushURL)   (browsers' subscriptions)")
        lines.append("  sandbox CA   \(endpoints.caCertificatePath)")
        lines.append("  devices      \(registry)   (the sandbox's, kept across restarts)")
        lines.append("  APNs key     AuthKey_\(metadata.keyID) (team \(metadata.teamID))")
        lines.append("  FCM account  \(account.clientEmail) (project \(account.projectID), \(accountPath))")
        return lines
    }
}
