public import HeraldAPNs
public import HeraldAPNsCore

/// The push network a push goes through.
public enum ProviderNetwork: String, Sendable, Codable, Hashable {
    case apns
    case fcm
}

/// One push in a batch sent to `herald provider` (`POST /v1/push/batch`).
public struct ProviderPush: Sendable, Codable, Hashable {
    /// The caller's id for this push, echoed in its result.
    public var id: String
    /// `apns` (the default) or `fcm`.
    public var network: ProviderNetwork
    /// The APNs device token, or the FCM registration token.
    public var deviceToken: String
    /// The APNs topic; for FCM, the app's package name (informational).
    public var topic: String
    /// Required for APNs; ignored for FCM.
    public var pushType: APNsPushType?
    /// APNs: 10, 5 or 1. FCM: 10 and 5 (user-visible) are `HIGH`, 1 (background) is `NORMAL`.
    public var priority: Int
    /// Seconds since the epoch: `apns-expiration`, or the end of FCM's `android.ttl`.
    public var expiration: Int64?
    /// `apns-collapse-id`, or FCM's `collapse_key`.
    public var collapseID: String?
    /// Kept across retries; made by the provider when absent (APNs only).
    public var apnsID: String?
    /// The APNs JSON body as text; for FCM, the data: a JSON object of strings, as text.
    public var payload: String

    public init(
        id: String,
        network: ProviderNetwork = .apns,
        deviceToken: String,
        topic: String,
        pushType: APNsPushType?,
        priority: Int,
        expiration: Int64? = nil,
        collapseID: String? = nil,
        apnsID: String? = nil,
        payload: String
    ) {
        self.id = id
        self.network = network
        self.deviceToken = deviceToken
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = payload
    }

    enum CodingKeys: String, CodingKey {
        case id, network
        case deviceToken = "device_token"
        case topic
        case pushType = "push_type"
        case priority, expiration
        case collapseID = "collapse_id"
        case apnsID = "apns_id"
        case payload
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        network = try container.decodeIfPresent(ProviderNetwork.self, forKey: .network) ?? .apns
        deviceToken = try container.decode(String.self, forKey: .deviceToken)
        topic = try container.decode(String.self, forKey: .topic)
        pushType = try container.decodeIfPresent(APNsPushType.self, forKey: .pushType)
        priority = try container.decode(Int.self, forKey: .priority)
        expiration = try container.decodeIfPresent(Int64.self, forKey: .expiration)
        collapseID = try container.decodeIfPresent(String.self, forKey: .collapseID)
        apnsID = try container.decodeIfPresent(String.self, forKey: .apnsID)
        payload = try container.decode(String.self, forKey: .payload)
    }
}

/// The request body of `POST /v1/push/batch`.
public struct ProviderBatch: Sendable, Codable {
    public var pushes: [ProviderPush]

    public init(pushes: [ProviderPush]) {
        self.pushes = pushes
    }
}

/// What became of one push of a batch.
public struct ProviderPushResult: Sendable, Codable, Hashable {
    /// `delivered`, `token_dead`, `failed`, `retry_later` or `expired`.
    public var outcome: String
    public var id: String
    public var apnsID: String?
    public var uniqueID: String?
    /// APNs' reason, or the provider's when the push never reached APNs.
    public var reason: String?
    public var status: Int?
    /// For a dead token (410): when APNs learned it, in milliseconds since the epoch.
    public var timestamp: Int64?
    /// For `retry_later`: seconds the push network asked to wait (FCM's `Retry-After`).
    public var retryAfter: Int64?
    /// For a delivered FCM message: FCM's message name.
    public var name: String?

    public init(
        outcome: String,
        id: String,
        apnsID: String? = nil,
        uniqueID: String? = nil,
        reason: String? = nil,
        status: Int? = nil,
        timestamp: Int64? = nil,
        retryAfter: Int64? = nil,
        name: String? = nil
    ) {
        self.outcome = outcome
        self.id = id
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.reason = reason
        self.status = status
        self.timestamp = timestamp
        self.retryAfter = retryAfter
        self.name = name
    }

    /// The wire form of a client result.
    public init(id: String, apnsID: String, result: APNsResult) {
        switch result {
        case .delivered(let apnsID, let uniqueID):
            self.init(outcome: "delivered", id: id, apnsID: apnsID, uniqueID: uniqueID, status: 200)
        case .tokenDead(let reason, let timestamp):
            self.init(
                outcome: "token_dead",
                id: id,
                apnsID: apnsID,
                reason: reason.rawValue,
                status: reason.status,
                timestamp: timestamp
            )
        case .failed(let reason, let status):
            self.init(
                outcome: "failed",
                id: id,
                apnsID: apnsID,
                reason: reason?.rawValue ?? "InvalidNotification",
                status: status
            )
        case .retryLater(let reason):
            self.init(outcome: "retry_later", id: id, apnsID: apnsID, reason: reason)
        case .expired:
            self.init(outcome: "expired", id: id, apnsID: apnsID)
        }
    }

    enum CodingKeys: String, CodingKey {
        case outcome, id
        case apnsID = "apns_id"
        case uniqueID = "unique_id"
        case reason, status, timestamp
        case retryAfter = "retry_after"
        case name
    }
}

/// The answer of `POST /v1/push/batch`: one result per push, in order.
public struct ProviderBatchResult: Sendable, Codable {
    public var results: [ProviderPushResult]

    public init(results: [ProviderPushResult]) {
        self.results = results
    }
}
