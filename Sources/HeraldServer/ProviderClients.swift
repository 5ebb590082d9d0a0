import Foundation
import HeraldAPNs
import HeraldFCM
import HeraldHMS
import HeraldHMSCore
public import HeraldProvider
import HeraldPush
import HeraldRelay
import HeraldSandbox
public import HeraldStore
import HeraldWebPush
import HeraldWebPushCore
public import Logging
public import NIOCore
public import ServiceLifecycle

/// The provider stage's clients, made in one place (`herald serve` with Apple's keys or in
/// sandbox mode, `herald provider`, `herald bench`): for every APNs key a client per environment
/// it serves, all signing with the key's one provider token (shared through the store when there
/// is one), and an FCM sender per service account.
public struct ProviderClients {
    /// Routes each push to its key's client for its environment, or its account's sender.
    public var stage: ProviderStage
    /// What must run beside the stage: the clients and the shared tokens' services.
    public var services: [any Service]
    /// The keys' shared tokens, to prepare before the first push.
    var sharedTokens: [SharedProviderToken]

    /// The clients of a configuration's keys and accounts; its default key and account are the
    /// stage's.
    ///
    /// - Parameters:
    ///   - tokenCache: Where a key's provider token is kept between runs (read once when shared).
    ///   - shared: The store every node shares the keys' tokens through; nil signs locally.
    static func make(
        configuration: HeraldConfiguration,
        tokenCache: (HeraldConfiguration.APNs) -> String?,
        shared: (any ProviderTokenStore)?,
        logger: Logger,
        group: any EventLoopGroup
    ) throws(HeraldServerError) -> ProviderClients {
        try make(
            apnsKeys: configuration.apnsKeys,
            fcmAccounts: configuration.fcmAccounts,
            defaultAPNsKey: configuration.apns?.name,
            defaultFCMAccount: configuration.fcm?.name,
            vapidKeys: configuration.vapidKeys,
            hmsApps: configuration.hmsApps,
            tokenCache: tokenCache,
            shared: shared,
            logger: logger,
            group: group
        )
    }

    /// The clients of `apnsKeys` and `fcmAccounts`.
    ///
    /// - Parameters:
    ///   - defaultAPNsKey: The key of a push that names none: the only key when nil.
    ///   - defaultFCMAccount: The account of a push that names none: the only account when nil.
    ///   - fcmTokenURI: Replaces each service account's `token_uri` (the in-process sandbox's
    ///     port is only known once it started).
    ///   - tokenCache: Where a key's provider token is kept between runs (read once when shared);
    ///     nil keeps it nowhere.
    ///   - shared: The store every node shares the keys' tokens through; nil signs locally.
    public static func make(
        apnsKeys: [HeraldConfiguration.APNs],
        fcmAccounts: [HeraldConfiguration.FCM],
        defaultAPNsKey: String? = nil,
        defaultFCMAccount: String? = nil,
        fcmTokenURI: String? = nil,
        vapidKeys: [HeraldConfiguration.VAPID] = [],
        webPush: WebPushSettings = WebPushSettings(),
        hmsApps: [HeraldConfiguration.HMS] = [],
        tokenCache: (HeraldConfiguration.APNs) -> String? = { _ in nil },
        shared: (any ProviderTokenStore)? = nil,
        logger: Logger,
        group: any EventLoopGroup
    ) throws(HeraldServerError) -> ProviderClients {
        var keys: [ProviderStage.APNsKey] = []
        var services: [any Service] = []
        var sharedTokens: [SharedProviderToken] = []
        for apns in apnsKeys {
            let settings = apns.settings(tokenCache: tokenCache(apns))
            var keyLogger = logger
            keyLogger[metadataKey: "apns_key"] = "\(apns.name)"
            let (clients, _, sharedToken) = try settings.makeClients(
                urls: apns.urls.isEmpty ? [apns.resolvedEnvironment: apns.url] : apns.urls,
                logger: keyLogger,
                group: group,
                shared: shared
            )
            keys.append(ProviderStage.APNsKey(name: apns.name, environment: apns.resolvedEnvironment, clients: clients))
            services += APNsEnvironment.allCases.compactMap { clients[$0] }
            if let sharedToken {
                sharedTokens.append(sharedToken)
                services.append(sharedToken)
            }
        }
        var accounts: [String: FCMClient] = [:]
        for fcm in fcmAccounts {
            let client = try FCMSettings(
                serviceAccount: fcm.serviceAccount,
                url: fcm.url,
                caFile: fcm.ca,
                tokenURI: fcmTokenURI
            ).makeClient(logger: logger, group: group)
            accounts[fcm.name] = client
            services.append(client)
        }
        let webPushClient = try webPush.makeClient(vapidKeys: vapidKeys, logger: logger, group: group)
        if let webPushClient { services.append(webPushClient) }
        var huaweiApps: [String: HMSClient] = [:]
        for app in hmsApps {
            let client = try app.makeClient(logger: logger, group: group)
            huaweiApps[app.name] = client
            services.append(client)
        }
        let stage = ProviderStage(
            apnsKeys: keys,
            defaultAPNsKey: defaultAPNsKey,
            fcmAccounts: accounts,
            defaultFCMAccount: defaultFCMAccount,
            webPush: webPushClient,
            hmsApps: huaweiApps,
            logger: logger
        )
        return ProviderClients(stage: stage, services: services, sharedTokens: sharedTokens)
    }

    /// Takes up each key's stored token (or publishes the first) before the first push.
    public func prepare() async {
        for token in sharedTokens { await token.prepare() }
    }
}

/// How the Web Push sender reaches push services beyond its keys: the sandbox's CA and private
/// endpoints in sandbox mode, the system's roots and public endpoints otherwise.
public struct WebPushSettings: Sendable {
    /// A PEM CA file to trust instead of the system roots.
    public var ca: String?
    /// Whether subscriptions may name loopback or private addresses (the sandbox's push service).
    public var allowPrivateEndpoints = false

    public init(ca: String? = nil, allowPrivateEndpoints: Bool = false) {
        self.ca = ca
        self.allowPrivateEndpoints = allowPrivateEndpoints
    }

    /// The sender of `vapidKeys`; nil without any. A key file that cannot be read, or a subject
    /// that is not a URL, stops the start with one line.
    func makeClient(
        vapidKeys: [HeraldConfiguration.VAPID],
        logger: Logger,
        group: any EventLoopGroup
    ) throws(HeraldServerError) -> WebPushClient? {
        guard !vapidKeys.isEmpty else { return nil }
        var signers: [String: VAPIDSigner] = [:]
        for vapid in vapidKeys {
            signers[vapid.name] = try vapid.signer()
        }
        var configuration = WebPushClientConfiguration(signers: signers)
        configuration.caCertificatePath = ca
        configuration.allowPrivateEndpoints = allowPrivateEndpoints
        return WebPushClient(configuration: configuration, logger: logger, group: group)
    }
}

extension HeraldConfiguration.HMS {
    /// The app's credentials, its secret read from its file (surrounding blanks dropped) and
    /// checked: a short secret or a token URL that is not https stops the start with one line.
    func credentials() throws(HeraldServerError) -> HMSAppCredentials {
        guard let text = try? String(contentsOfFile: clientSecretFile, encoding: .utf8) else {
            throw .credentials("Huawei app \(name): cannot read \(clientSecretFile)")
        }
        let credentials = HMSAppCredentials(
            appID: appID,
            clientSecret: text.trimmingCharacters(in: .whitespacesAndNewlines),
            tokenURL: tokenURL
        )
        do {
            try credentials.check()
        } catch {
            throw .configuration("hms_apps (\(name)): \(error.message)")
        }
        return credentials
    }

    /// This app sending to the in-process sandbox's Push Kit, trusting its CA.
    func sending(to endpoints: SandboxEndpoints) -> Self {
        var app = self
        app.url = endpoints.hmsURL
        app.tokenURL = endpoints.hmsTokenURL
        app.ca = endpoints.caCertificatePath
        return app
    }

    /// The Push Kit sender of this app.
    func makeClient(logger: Logger, group: any EventLoopGroup) throws(HeraldServerError) -> HMSClient {
        var configuration = HMSClientConfiguration(credentials: try credentials())
        configuration.baseURL = url
        configuration.caCertificatePath = ca
        do {
            return try HMSClient(configuration: configuration, logger: logger, group: group)
        } catch {
            throw .configuration("hms_apps (\(name)): \(error)")
        }
    }
}

extension HeraldConfiguration.VAPID {
    /// The key, read from its file.
    func loadKey() throws(HeraldServerError) -> VAPIDKey {
        guard let pem = try? String(contentsOfFile: key, encoding: .utf8) else {
            throw .credentials("VAPID key \(name): cannot read \(key)")
        }
        do {
            return try VAPIDKey(pem: pem)
        } catch {
            throw .credentials("VAPID key \(name) (\(key)): \(error.message)")
        }
    }

    /// The signer of this key and subject.
    func signer() throws(HeraldServerError) -> VAPIDSigner {
        do {
            return try VAPIDSigner(key: try loadKey(), subject: subject)
        } catch let error as HeraldServerError {
            throw error
        } catch {
            throw .configuration("VAPID key \(name): \(error)")
        }
    }
}

extension HeraldConfiguration.APNs {
    /// What its clients are made from.
    func settings(tokenCache: String? = nil) -> APNsSettings {
        APNsSettings(
            key: key,
            keyID: keyID,
            teamID: teamID,
            url: url,
            caFile: ca,
            connections: connections,
            requestTimeout: Int(requestTimeout.components.seconds),
            tokenCache: tokenCache
        )
    }

    /// `environment` as APNs' type (it is checked when the configuration is resolved).
    var resolvedEnvironment: APNsEnvironment { APNsEnvironment(rawValue: environment) ?? .development }
}

extension HeraldConfiguration {
    /// Where a key's provider token is kept between runs: the default key's where it always was,
    /// another key's beside it, under its name.
    func providerTokenPath(for apns: APNs, base: String? = nil) -> String {
        let base = base ?? providerTokenPath
        return apns.name == Self.defaultName ? base : base + "-" + apns.name
    }

    /// What the relay must know of the fleet: the names apps may give, and the environment of a
    /// device that names none. Nil name sets when the keys are elsewhere (a remote provider).
    func fleetConfiguration(knowsCredentials: Bool) -> FleetConfiguration {
        var fleet = FleetConfiguration()
        if knowsCredentials {
            fleet.apnsKeys = Set(apnsKeys.map(\.name))
            fleet.fcmAccounts = Set(fcmAccounts.map(\.name))
            fleet.defaultAPNsEnvironment = apns?.resolvedEnvironment ?? .development
        }
        // Public halves only: a relay whose provider is remote serves them from the same files.
        for vapid in vapidKeys {
            if let key = try? vapid.loadKey() { fleet.applicationServerKeys[vapid.name] = key.applicationServerKey }
        }
        return fleet
    }
}

extension HeraldConfiguration {
    /// The banner's APNs lines: the default key as it always was, then every other key by name.
    var apnsBannerLines: [String] {
        var lines: [String] = []
        if let apns {
            let keyID =
                apns.keyID
                ?? APNsSettings(key: apns.key, keyID: nil, teamID: apns.teamID, url: apns.url, caFile: nil)
                .resolvedKeyID ?? "?"
            lines.append("  APNs         \(apns.url) (key \(keyID), team \(apns.teamID))")
        }
        for key in apnsKeys where key.name != apns?.name {
            let urls = APNsEnvironment.allCases.compactMap { environment in
                key.urls[environment].map { "\(environment.rawValue) \($0)" }
            }
            lines.append("  APNs key     \(key.name): team \(key.teamID), \(urls.joined(separator: ", "))")
        }
        return lines
    }
}
