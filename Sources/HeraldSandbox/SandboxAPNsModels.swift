public import HeraldAPNsCore

/// One APNs request as the listener read it off an HTTP/2 stream.
public struct SandboxAPNsRequest: Sendable {
    public var method: String?
    public var path: String?
    public var authorization: String?
    public var topic: String?
    public var pushType: String?
    public var priority: String?
    public var expiration: String?
    public var collapseID: String?
    public var apnsID: String?
    /// An `apns-*` or `authorization` header appeared more than once.
    public var duplicateHeaders = false
    /// The body, up to one byte past the largest allowed payload.
    public var body: [UInt8] = []
    /// The body was longer than `body` holds.
    public var bodyTruncated = false

    public init() {}

    /// The most body bytes worth keeping: one past the VoIP limit proves "too large".
    public static let bodyCapacity = 5121
}

/// Per-connection facts that APNs rules depend on.
public struct SandboxConnectionState: Sendable {
    /// The key id of the first provider token sent on this connection.
    public var keyID: String?
    /// The TLS client certificate the connection presented, if any: such a connection is
    /// certificate-based and needs no provider token.
    public var clientCertificate: SandboxClientCertificate?
    /// Whether a valid provider token has been seen (the stream limit is raised after it).
    public var authenticated = false
    /// The environment of the listener the connection came to: its tokens only are accepted.
    public var environment: APNsEnvironment = .development

    public init(environment: APNsEnvironment = .development) {
        self.environment = environment
    }
}

/// A TLS client certificate a connection presented.
public enum SandboxClientCertificate: Sendable, Hashable {
    /// Issued by the sandbox's CA for an app, for an environment.
    case trusted(bundleID: String, environment: SandboxKey.Environment)
    /// Not issued by the sandbox's CA, expired, or unreadable: 403 BadCertificate.
    case untrusted
}

/// What the listener must do with a request.
public enum SandboxAPNsOutcome: Sendable, Equatable {
    /// Answer on the stream, after `delay`.
    case respond(SandboxAPNsResponse, delay: Duration)
    /// Close the connection without answering.
    case drop
    /// Send GOAWAY with this reason in its debug data, then close.
    case goaway(APNsReason?)
    /// Never answer.
    case stall
}

/// An APNs answer.
public struct SandboxAPNsResponse: Sendable, Equatable {
    public var status: Int
    public var apnsID: String
    /// Sent on success, as Apple's development environment does.
    public var uniqueID: String?
    public var reason: APNsReason?
    /// For 410: when the token stopped being valid, in milliseconds since the epoch.
    public var timestamp: Int64?

    /// The JSON body Apple sends with an error: `{"reason":"…"}`, plus `"timestamp"` for 410.
    public var body: [UInt8]? {
        guard let reason else { return nil }
        if let timestamp {
            return Array(#"{"reason":"\#(reason.rawValue)","timestamp":\#(timestamp)}"#.utf8)
        }
        return Array(#"{"reason":"\#(reason.rawValue)"}"#.utf8)
    }
}

/// What the sandbox saw of one key's provider tokens (`GET /sandbox/apns/provider-tokens`): a
/// provider that shares one token per key across its processes shows `tokens_accepted` 1 and
/// `updates_refused` 0 within any 20 minutes.
public struct SandboxProviderTokenCount: Sendable, Hashable, Codable {
    struct Key: Hashable {
        let teamID: String
        let keyID: String
    }

    /// The team (`iss`).
    public var teamID: String
    /// The key id (`kid`).
    public var keyID: String
    /// Distinct valid tokens taken up as the key's current one.
    public var tokensAccepted = 0
    /// New tokens refused with 429 TooManyProviderTokenUpdates (each refused request counts).
    public var updatesRefused = 0

    public init(teamID: String, keyID: String, tokensAccepted: Int = 0, updatesRefused: Int = 0) {
        self.teamID = teamID
        self.keyID = keyID
        self.tokensAccepted = tokensAccepted
        self.updatesRefused = updatesRefused
    }

    enum CodingKeys: String, CodingKey {
        case teamID = "team_id"
        case keyID = "key_id"
        case tokensAccepted = "tokens_accepted"
        case updatesRefused = "updates_refused"
    }
}
