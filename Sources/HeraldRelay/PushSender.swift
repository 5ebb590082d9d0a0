/// One push on its way to the push network.
public struct OutgoingPush: Sendable, Hashable {
    public var pushID: String
    public var deviceToken: String
    public var topic: String
    /// `alert` or `voip`.
    public var pushType: String
    /// 10 or 5.
    public var priority: Int
    /// APNs' `apns-expiration`: seconds since the epoch.
    public var expiration: Int64
    public var collapseID: String?
    /// The same for every attempt of this push, before and after a restart.
    public var apnsID: String
    /// The JSON body.
    public var payload: String

    public init(
        pushID: String,
        deviceToken: String,
        topic: String,
        pushType: String,
        priority: Int,
        expiration: Int64,
        collapseID: String?,
        apnsID: String,
        payload: String
    ) {
        self.pushID = pushID
        self.deviceToken = deviceToken
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = payload
    }
}

/// What the provider stage made of one push.
public enum PushOutcome: Sendable, Hashable {
    /// The push network accepted it.
    case delivered
    /// The token is dead (410 Unregistered / ExpiredToken, BadDeviceToken, DeviceTokenNotForTopic).
    case tokenDead(reason: String)
    /// Refused for good.
    case failed(reason: String)
    /// Not delivered yet; worth another attempt later.
    case retryLater(reason: String)
    /// Its expiration passed.
    case expired
}

/// The provider stage as the relay's dispatcher sees it: in-process or remote.
public protocol PushSender: Sendable {
    /// Sends every push and answers one outcome per push, in order. Never throws: trouble is a
    /// `retryLater` outcome.
    func send(_ pushes: [OutgoingPush]) async -> [PushOutcome]
}
