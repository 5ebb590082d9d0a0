public import HeraldFCMCore
import HeraldMacros

/// The operating system of an emulated device: which push network reaches it.
public enum SandboxPlatform: String, Sendable, Hashable, Codable, CaseIterable {
    /// APNs: a messaging token and a VoIP token, for a registered app.
    case ios
    /// FCM: one registration token, for a Firebase project.
    case android
    /// Huawei Push Kit: one token, for a registered Huawei app.
    case huawei
    /// Web Push: a browser's subscription, whose endpoint is its messaging token.
    case web
}

/// An FCM message as the sandbox delivers it to an Android device.
@MemberwiseInit
public struct SandboxFCMMessage: Sendable, Hashable, Codable {
    /// The message name `messages:send` answered (`projects/{p}/messages/0:…`).
    public var name: String
    /// The registration token it was sent to.
    public var token: String
    /// The data payload, as sent.
    public var data: [String: String]
    /// `android.priority`; `NORMAL` when the sender gave none, as FCM assumes for data messages.
    public var priority: FCMMessage.Priority = .normal
    /// `android.ttl` as sent (`"86400s"`); nil means FCM's default of four weeks.
    public var ttl: String?
    /// `android.collapse_key`.
    public var collapseKey: String?
    /// When the sandbox accepted it, in milliseconds since the epoch.
    public var sentAt: Int64

    enum CodingKeys: String, CodingKey {
        case name, token, data, priority, ttl
        case collapseKey = "collapse_key"
        case sentAt = "sent_at"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        token = try container.decode(String.self, forKey: .token)
        data = try container.decodeIfPresent([String: String].self, forKey: .data) ?? [:]
        priority = try container.decodeIfPresent(FCMMessage.Priority.self, forKey: .priority) ?? .normal
        ttl = try container.decodeIfPresent(String.self, forKey: .ttl)
        collapseKey = try container.decodeIfPresent(String.self, forKey: .collapseKey)
        sentAt = try container.decode(Int64.self, forKey: .sentAt)
    }

    /// Writes `ttl` and `collapse_key` as `null` when absent, so a device sees every field.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(token, forKey: .token)
        try container.encode(data, forKey: .data)
        try container.encode(priority, forKey: .priority)
        try container.encode(ttl, forKey: .ttl)
        try container.encode(collapseKey, forKey: .collapseKey)
        try container.encode(sentAt, forKey: .sentAt)
    }
}

/// An injected FCM fault: the next matching `messages:send` requests get this error instead of
/// the normal answer.
@MemberwiseInit
public struct SandboxFCMFault: Sendable, Hashable, Codable {
    /// The FCM error code in the body's details.
    public var errorCode: FCMErrorCode
    /// The HTTP status; defaults to the code's (429 for `QUOTA_EXCEEDED`, 503 for `UNAVAILABLE`…).
    public var status: Int?
    /// Seconds for a `Retry-After` header; none when nil.
    public var retryAfter: Int?
    /// How many matching requests get the fault.
    public var count: Int = 1
    /// Only requests to this registration token.
    public var token: String?

    enum CodingKeys: String, CodingKey {
        case errorCode = "error_code"
        case status
        case retryAfter = "retry_after"
        case count, token
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        errorCode = try container.decode(FCMErrorCode.self, forKey: .errorCode)
        status = try container.decodeIfPresent(Int.self, forKey: .status)
        retryAfter = try container.decodeIfPresent(Int.self, forKey: .retryAfter)
        count = try container.decodeIfPresent(Int.self, forKey: .count) ?? 1
        token = try container.decodeIfPresent(String.self, forKey: .token)
    }

    func matches(token: String?) -> Bool {
        self.token == nil || self.token == token
    }
}

/// One request the FCM listener answered (`messages:send` or `/token`), for tests and tools to
/// assert on.
public struct SandboxFCMInspectionRecord: Sendable, Hashable, Codable {
    /// Which endpoint.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// `POST /v1/projects/{project}/messages:send`.
        case send
        /// `POST /token`.
        case token
    }

    /// Increases by one per FCM request; survives the log dropping old records.
    public var sequence: Int
    /// Milliseconds since the epoch.
    public var receivedAt: Int64
    public var kind: Kind
    /// For a send, the project in the path; for a token request, the service account's project.
    public var project: String?
    /// The registration token the message named.
    public var token: String?
    /// `android.priority`, `android.ttl` and `android.collapse_key` as sent.
    public var priority: String?
    public var ttl: String?
    public var collapseKey: String?
    /// The data payload, when it could be read.
    public var data: [String: String]?
    /// The answered status.
    public var status: Int
    /// The FCM error code (`UNREGISTERED`…), the `google.rpc` status when FCM sends no code
    /// (`UNAUTHENTICATED`, `PERMISSION_DENIED`), or for a token request the OAuth2 error
    /// (`invalid_grant`…).
    public var errorCode: String?
    /// The error message answered.
    public var errorMessage: String?
    /// `accepted`, `rejected`, or `injected` (a fault).
    public var outcome: String
    /// For an accepted send: `delivered`, `stored`, `discarded: …`, or `validate_only`.
    public var delivery: String?
    /// The message name answered to an accepted send.
    public var name: String?

    enum CodingKeys: String, CodingKey {
        case sequence
        case receivedAt = "received_at"
        case kind, project, token, priority, ttl
        case collapseKey = "collapse_key"
        case data, status
        case errorCode = "error_code"
        case errorMessage = "error_message"
        case outcome, delivery, name
    }
}
