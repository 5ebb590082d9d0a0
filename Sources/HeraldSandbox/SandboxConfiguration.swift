import Foundation
public import HeraldHTTPSupport
import HeraldMacros
public import Prometheus

/// Everything the sandbox can be told at start; every field has a working default.
public struct SandboxConfiguration: Sendable {
    /// The address both listeners bind to. Loopback by default: the sandbox is a development tool.
    public var host: String = "127.0.0.1"
    /// The APNs port (HTTP/2 over TLS). Apple uses 443 and 2197; 0 picks a free port.
    public var apnsPort: Int = 2197
    /// The port of APNs' production environment (the development one is `apnsPort`), whose
    /// listener accepts production device tokens only; nil plays the development environment
    /// alone, 0 picks a free port.
    public var apnsProductionPort: Int? = nil
    /// The control and device port (HTTP/1.1 and WebSocket); 0 picks a free port.
    public var controlPort: Int = 2198
    /// The FCM HTTP v1 port (HTTP/2 or HTTP/1.1 over TLS): `messages:send` and the OAuth2 token
    /// endpoint `/token`; 0 picks a free port.
    public var fcmPort: Int = 2196
    /// The Web Push port (HTTP/2 or HTTP/1.1 over TLS): `POST /wp/{subscription}`; nil: 2194
    /// beside the default `apnsPort`, else a free one (`resolvedWebPushPort`); 0 picks a free one.
    public var webPushPort: Int? = nil
    /// The Push Kit port (HTTP/2 or HTTP/1.1 over TLS): `/v1/{appId}/messages:send` and the OAuth
    /// 2.0 token endpoint `/oauth2/v3/token`; 0 (the default here) picks a free port, so sandboxes
    /// built before they knew of Push Kit never collide on one. `herald sandbox` listens on 2193.
    public var hmsPort: Int = 0
    /// The TLS identity of the APNs, FCM, Web Push and Push Kit listeners.
    public var tls: SandboxTLS
    /// Streams a connection may open once it has sent a valid provider token; before that, 1.
    public var maxConcurrentStreams: Int = 1000
    /// A team (and key) that starts using a new provider token sooner than this after its
    /// previous one gets 429 TooManyProviderTokenUpdates. Apple's is 20 minutes.
    public var providerTokenUpdateInterval: Duration = .seconds(20 * 60)
    /// A provider token older than this gets 403 ExpiredProviderToken. Apple's is one hour.
    public var providerTokenMaxAge: Duration = .seconds(60 * 60)
    /// A connection that sends nothing for this long is closed with GOAWAY `IdleTimeout`;
    /// nil never closes idle connections.
    public var idleTimeout: Duration? = .seconds(60 * 60)
    /// The control and FCM listeners' timeouts and connection cap (header read 10 s, idle 60 s,
    /// 512 connections each). The FCM listener is TLS from its first byte: there the header-read
    /// timeout bounds the TLS handshake (see docs/sandbox.md).
    public var http = HTTPConnectionLimits()
    /// How many requests the inspection log keeps (oldest dropped first).
    public var inspectionCapacity: Int = 10_000
    /// The sandbox's time; tests advance it to reach a time rule's boundary without waiting.
    public var clock = SandboxClock()
    /// Pushes per second one device token may receive before 429 TooManyRequests; nil for no limit.
    public var perTokenRateLimit: Int? = nil
    /// Storage for a notification with no `apns-expiration` while its device is offline.
    public var defaultStorage: Duration = .seconds(30 * 24 * 60 * 60)
    /// A JSON file where the registered apps, devices and their tokens are kept, so a restarted
    /// sandbox still accepts the tokens it issued before (relays hold them); read at start and
    /// rewritten at every change. nil (the default) keeps them in memory only.
    public var registryFile: String? = nil
    /// Apps (bundle ids and their teams) known at start.
    public var apps: [SandboxApp] = []
    /// Provider keys known at start.
    public var keys: [SandboxKey] = []
    /// Google service accounts known at start: their assertions are exchanged for access tokens.
    public var serviceAccounts: [SandboxServiceAccount] = []
    /// How long an FCM access token is valid; the token endpoint answers `expires_in` one second
    /// less, as Google does (3599 for an hour).
    public var fcmAccessTokenLifetime: Duration = .seconds(3600)
    /// Huawei apps known at start: their client secrets get Push Kit access tokens.
    public var hmsApps: [SandboxHMSApp] = []
    /// How long a Push Kit access token is valid (`expires_in`; Huawei's is 3600).
    public var hmsAccessTokenLifetime: Duration = .seconds(3600)
    /// Serve `GET /metrics` on the control port from this registry (the process's); none when nil.
    public var metrics: PrometheusCollectorRegistry?

    /// The production port of a sandbox that plays both environments: the one given, else 2195
    /// beside the default 2197, else one picked (so sandboxes on other ports never collide on it).
    public static func productionPort(_ given: Int?, apnsPort: Int) -> Int {
        given ?? (apnsPort == 2197 ? 2195 : 0)
    }

    /// The Web Push port bound: the one given, else 2194 beside the default APNs port 2197, else
    /// one picked (so sandboxes on other ports, as in tests, never collide on it).
    public var resolvedWebPushPort: Int {
        webPushPort ?? (apnsPort == 2197 ? 2194 : 0)
    }

    public init(tls: SandboxTLS) {
        self.tls = tls
    }
}

/// The PEM files the APNs listener presents.
@MemberwiseInit
public struct SandboxTLS: Sendable {
    /// The server certificate chain (leaf first), PEM.
    public var certificateChainPath: String
    /// The server private key, PEM.
    public var privateKeyPath: String
    /// The CA that issued the chain: what clients trust.
    public var caCertificatePath: String
}

/// An app the sandbox accepts pushes for: its bundle id (the `apns-topic`) and its team.
@MemberwiseInit
public struct SandboxApp: Sendable, Hashable, Codable {
    public var bundleID: String
    public var teamID: String

    enum CodingKeys: String, CodingKey {
        case bundleID = "bundle_id"
        case teamID = "team_id"
    }
}

/// A provider key: what `herald keys apns` writes to `AuthKey_<KEYID>.json`.
@MemberwiseInit
public struct SandboxKey: Sendable, Hashable, Codable {
    /// The environments a key may be used in, as Apple lets you restrict a key.
    public enum Environment: String, Sendable, Hashable, Codable {
        case sandbox
        case production
        case both
    }

    public var keyID: String
    public var teamID: String
    public var publicKeyPEM: String
    /// Where the key is valid; the sandbox is a development environment, so a production-only
    /// key gets 403 BadEnvironmentKeyInToken.
    public var environment: Environment = .both

    enum CodingKeys: String, CodingKey {
        case keyID = "key_id"
        case teamID = "team_id"
        case publicKeyPEM = "public_key_pem"
        case environment
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        keyID = try container.decode(String.self, forKey: .keyID)
        teamID = try container.decode(String.self, forKey: .teamID)
        publicKeyPEM = try container.decode(String.self, forKey: .publicKeyPEM)
        environment = try container.decodeIfPresent(Environment.self, forKey: .environment) ?? .both
    }
}

/// The sandbox's configuration file: apps, keys and service accounts to register at start.
public struct SandboxConfigurationFile: Sendable, Codable {
    public var apps: [SandboxApp]?
    public var keys: [SandboxKey]?
    public var serviceAccounts: [SandboxServiceAccount]?
    public var hmsApps: [SandboxHMSApp]?

    enum CodingKeys: String, CodingKey {
        case apps, keys
        case serviceAccounts = "service_accounts"
        case hmsApps = "hms_apps"
    }

    /// Reads a JSON configuration file.
    public static func load(path: String) throws -> SandboxConfigurationFile {
        let data = try Data(contentsOf: URL(filePath: path))
        return try JSONDecoder().decode(SandboxConfigurationFile.self, from: data)
    }
}
