import HeraldMacros
public import HeraldPush

/// A Web Push message as the sandbox delivers it to an emulated browser (`web_push` on the
/// device connection): the body exactly as the sender posted it (`aes128gcm` ciphertext, which
/// only the browser's subscription key opens) and the RFC 8030 headers it came with.
@MemberwiseInit
public struct SandboxWebPushMessage: Sendable, Hashable, Codable {
    /// The message id, the last part of the `Location` the push service answered.
    public var id: String
    /// The subscription endpoint it was posted to (the device's messaging token).
    public var endpoint: String
    /// The body, standard base64 with padding; empty for a push without a payload.
    public var body: String
    /// `TTL` as the push service kept it, in seconds.
    public var ttl: Int
    /// `Urgency`; `normal` when the sender gave none.
    public var urgency: WebPushUrgency = .normal
    /// `Topic`; left out of the JSON when the request had none.
    public var topic: String?
    /// When the sandbox accepted it, in milliseconds since the epoch.
    public var sentAt: Int64

    enum CodingKeys: String, CodingKey {
        case id, endpoint, body, ttl, urgency, topic
        case sentAt = "sent_at"
    }
}

/// An injected Web Push fault: the next matching push requests get this status instead of the
/// normal answer.
@MemberwiseInit
public struct SandboxWebPushFault: Sendable, Hashable, Codable {
    /// The status: 429, 500 or 503 (any of 400–599 is taken).
    public var status: Int
    /// Seconds for a `Retry-After` header; none when nil.
    public var retryAfter: Int?
    /// How many matching requests get the fault.
    public var count: Int = 1
    /// Only requests to this subscription: its endpoint, or the id at its end.
    public var endpoint: String?

    enum CodingKeys: String, CodingKey {
        case status
        case retryAfter = "retry_after"
        case count, endpoint
    }

    public init(from decoder: any Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            status: try values.decode(Int.self, forKey: .status),
            retryAfter: try values.decodeIfPresent(Int.self, forKey: .retryAfter),
            count: try values.decodeIfPresent(Int.self, forKey: .count) ?? 1,
            endpoint: try values.decodeIfPresent(String.self, forKey: .endpoint)
        )
    }

    func matches(subscriptionID: String) -> Bool {
        guard let endpoint else { return true }
        return endpoint == subscriptionID || endpoint.hasSuffix("/wp/" + subscriptionID)
    }
}

extension SandboxWebPushFault: CountedFault {}

/// One push request the Web Push listener answered, for tests and tools to assert on. Nothing in
/// it is clear text: the body is the sender's ciphertext.
public struct SandboxWebPushInspectionRecord: Sendable, Hashable, Codable {
    /// A VAPID token's key and claims.
    public struct VAPID: Sendable, Hashable, Codable {
        /// `k`, base64url.
        public var k: String
        public var aud: String
        public var exp: Int64
        public var sub: String
        /// `t`: the JWT as received, so a test can verify its signature on its own.
        public var t: String = ""
    }

    /// Increases by one per request; survives the log dropping old records.
    public var sequence: Int
    /// Milliseconds since the epoch.
    public var receivedAt: Int64
    /// The subscription id of the path (`/wp/{id}`).
    public var endpointID: String
    /// The answered status.
    public var status: Int
    /// `ttl`, `urgency`, `topic` and `content-encoding` as sent (lowercase names), those present.
    public var headers: [String: String] = [:]
    /// The VAPID token's key and claims, once its signature verified.
    public var vapid: VAPID?
    /// The body's size in bytes (its `content-length` when it was too large to read).
    public var bodySize: Int?
    /// The body, standard base64 (`aes128gcm` ciphertext), when it was read.
    public var body: String?
    /// `accepted`, `rejected` or `injected` (a fault).
    public var outcome: String
    /// For an accepted push: `delivered`, `stored`, `discarded: browser offline and TTL is 0`.
    public var delivery: String?
    /// The `Location` answered: the message's URL, `…/m/<message id>`.
    public var location: String?
    /// Why it was refused.
    public var error: String?

    enum CodingKeys: String, CodingKey {
        case sequence, status, headers, vapid, body, outcome, delivery, location, error
        case receivedAt = "received_at"
        case endpointID = "endpoint_id"
        case bodySize = "body_size"
    }

    /// A record about to be filled in.
    init(endpointID: String, receivedAt: Int64) {
        sequence = 0
        self.receivedAt = receivedAt
        self.endpointID = endpointID
        status = 0
        outcome = "rejected"
    }
}

extension SandboxWebPushInspectionRecord: InspectionLogEntry {
    var record: SandboxWebPushInspectionRecord { self }
}
