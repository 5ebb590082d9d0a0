public import HeraldAPNs
public import HeraldAPNsCore

/// One push in a batch sent to `herald provider` (`POST /v1/push/batch`).
public struct ProviderPush: Sendable, Codable, Hashable {
    /// The caller's id for this push, echoed in its result.
    public var id: String
    public var deviceToken: String
    public var topic: String
    public var pushType: APNsPushType
    public var priority: Int
    public var expiration: Int64?
    public var collapseID: String?
    /// Kept across retries; made by the provider when absent.
    public var apnsID: String?
    /// The APNs JSON body, as text.
    public var payload: String

    public init(
        id: String,
        deviceToken: String,
        topic: String,
        pushType: APNsPushType,
        priority: Int,
        expiration: Int64? = nil,
        collapseID: String? = nil,
        apnsID: String? = nil,
        payload: String
    ) {
        self.id = id
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
        case id
        case deviceToken = "device_token"
        case topic
        case pushType = "push_type"
        case priority, expiration
        case collapseID = "collapse_id"
        case apnsID = "apns_id"
        case payload
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

    public init(
        outcome: String,
        id: String,
        apnsID: String? = nil,
        uniqueID: String? = nil,
        reason: String? = nil,
        status: Int? = nil,
        timestamp: Int64? = nil
    ) {
        self.outcome = outcome
        self.id = id
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.reason = reason
        self.status = status
        self.timestamp = timestamp
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
    }
}

/// The answer of `POST /v1/push/batch`: one result per push, in order.
public struct ProviderBatchResult: Sendable, Codable {
    public var results: [ProviderPushResult]

    public init(results: [ProviderPushResult]) {
        self.results = results
    }
}
