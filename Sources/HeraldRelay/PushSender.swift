/// One push on its way to the push network.
public struct OutgoingPush: Sendable, Hashable {
    public var pushID: String
    public var deviceToken: String
    /// The APNs topic, or the Android package name for FCM.
    public var topic: String
    /// `alert` or `voip` for APNs; `fcm` for an FCM data message.
    public var pushType: String
    /// 10 or 5; FCM gets both as `HIGH` (calls and user-visible messages).
    public var priority: Int
    /// APNs' `apns-expiration` (FCM: the end of `android.ttl`), seconds since the epoch.
    public var expiration: Int64
    /// `apns-collapse-id`, or FCM's `collapse_key`.
    public var collapseID: String?
    /// The same for every attempt of this push, before and after a restart.
    public var apnsID: String
    /// The JSON body (APNs), or the data message's JSON object of strings (FCM).
    public var payload: String

    /// The network this push goes through.
    public var network: PushNetwork { pushType == PushNetwork.fcmPushType ? .fcm : .apns }

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

/// The push networks the provider stage speaks to.
public enum PushNetwork: String, Sendable, Hashable, CaseIterable {
    /// Apple Push Notification service: iOS devices.
    case apns
    /// Firebase Cloud Messaging HTTP v1: Android devices.
    case fcm

    /// The outbox's `push_type` of an FCM data message.
    public static let fcmPushType = "fcm"
}

/// What the provider stage made of one push.
public enum PushOutcome: Sendable, Hashable {
    /// The push network accepted it.
    case delivered
    /// The token is dead (410 Unregistered / ExpiredToken, BadDeviceToken, DeviceTokenNotForTopic).
    case tokenDead(reason: String)
    /// Refused for good.
    case failed(reason: String)
    /// Not delivered yet; worth another attempt later, and no sooner than `after` when the push
    /// network said so (FCM's `Retry-After`).
    case retryLater(reason: String, after: Duration? = nil)
    /// Its expiration passed.
    case expired
}

/// The provider stage as the relay's dispatcher sees it: in-process or remote.
public protocol PushSender: Sendable {
    /// Sends every push and answers one outcome per push, in order. Never throws: trouble is a
    /// `retryLater` outcome.
    func send(_ pushes: [OutgoingPush]) async -> [PushOutcome]
}
