public import HeraldHMSCore
import HeraldMacros

/// A Huawei app the sandbox's Push Kit knows: its id (the OAuth client id and the
/// `/v1/{appId}/messages:send` path) and its client secret.
@MemberwiseInit
public struct SandboxHMSApp: Sendable, Hashable, Codable, CustomStringConvertible {
    enum CodingKeys: String, CodingKey {
        case appID = "app_id"
        case clientSecret = "client_secret"
    }

    /// `app_id`: the OAuth client id too.
    public var appID: String
    /// `client_secret`: never answered by the control API, nor shown by `description`.
    public var clientSecret: String
    public var description: String { "SandboxHMSApp(app_id: \(appID))" }
}

/// A Push Kit data message as the sandbox delivers it to a Huawei device.
@MemberwiseInit
public struct SandboxHMSMessage: Sendable, Hashable, Codable {
    /// The `requestId` the send was answered with.
    public var requestID: String
    /// The Push Kit token it went to.
    public var token: String
    /// `message.data`, as sent (Herald's: a JSON object of strings).
    public var data: String
    /// `android.urgency`; `NORMAL` when the sender gave none.
    public var urgency: HMSUrgency = .normal
    /// `android.ttl` as sent; nil means Push Kit's default of one day.
    public var ttl: String?
    /// `android.collapse_key` (0–100; -1 or nil keeps every message).
    public var collapseKey: Int?
    /// `android.category`.
    public var category: String?
    /// When the sandbox accepted it, in milliseconds since the epoch.
    public var sentAt: Int64

    enum CodingKeys: String, CodingKey {
        case requestID = "request_id"
        case token, data, urgency, ttl, category
        case collapseKey = "collapse_key"
        case sentAt = "sent_at"
    }
}

/// An injected Push Kit fault: the next matching authorized `messages:send` requests get it
/// instead of the normal answer.
@MemberwiseInit
public struct SandboxHMSFault: Sendable, Hashable, Codable {
    /// What Push Kit answers.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// HTTP 503: flow control.
        case flowControl = "flow_control"
        /// HTTP 429 (with `retry_after` as `Retry-After`).
        case tooManyRequests = "too_many_requests"
        /// HTTP 500, 81000001.
        case internalError = "internal_error"
    }

    public var kind: Kind
    /// How many matching requests get it.
    public var count: Int = 1
    /// Seconds for a `Retry-After` header; none when nil.
    public var retryAfter: Int? = nil
    /// Only requests naming this token.
    public var token: String? = nil

    enum CodingKeys: String, CodingKey {
        case kind, count, token
        case retryAfter = "retry_after"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(Kind.self, forKey: .kind)
        count = try container.decodeIfPresent(Int.self, forKey: .count) ?? 1
        retryAfter = try container.decodeIfPresent(Int.self, forKey: .retryAfter)
        token = try container.decodeIfPresent(String.self, forKey: .token)
    }
}

/// One request the Push Kit listener answered (`messages:send` or the token endpoint), for tests
/// and tools to assert on. `data` is Herald's sealed JSON, so the log may keep it.
@MemberwiseInit
public struct SandboxHMSInspectionRecord: Sendable, Hashable, Codable {
    /// Which endpoint.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// `POST /v1/{appId}/messages:send`.
        case send
        /// `POST /oauth2/v3/token`.
        case token
    }

    /// Increases by one per Push Kit request; survives the log dropping old records.
    public var sequence: Int = 0
    /// Milliseconds since the epoch.
    public var receivedAt: Int64
    public var kind: Kind
    /// The app id in the path (a send) or the form's `client_id` (a token request).
    public var appID: String? = nil
    /// The tokens the message named.
    public var tokens: [String]? = nil
    public var urgency: String? = nil
    public var ttl: String? = nil
    public var collapseKey: Int? = nil
    public var category: String? = nil
    public var data: String? = nil
    /// The HTTP status answered.
    public var status: Int = 0
    /// The result code answered (`80000000`…), or for a token request Huawei's OAuth error number.
    public var code: String? = nil
    /// `msg` (or the token endpoint's `error_description`).
    public var message: String? = nil
    /// `accepted`, `rejected`, or `injected` (a fault).
    public var outcome: String = "rejected"
    /// Per accepted token: `delivered`, `stored`, `discarded: …`; or `validate_only`.
    public var delivery: [String]? = nil
    /// The `requestId` answered.
    public var requestID: String? = nil

    enum CodingKeys: String, CodingKey {
        case receivedAt = "received_at"
        case sequence, kind, tokens, urgency, ttl, category, data, status, code, message, outcome, delivery
        case appID = "app_id"
        case collapseKey = "collapse_key"
        case requestID = "request_id"
    }
}

extension SandboxHMSFault: CountedFault {}

extension SandboxHMSInspectionRecord: InspectionLogEntry {
    var record: SandboxHMSInspectionRecord { self }
}
