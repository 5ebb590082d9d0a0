import HeraldMacros

/// The push networks Herald delivers through.
public enum PushNetwork: String, Sendable, Hashable, Codable, CaseIterable {
    /// Apple Push Notification service: iOS devices.
    case apns
    /// Firebase Cloud Messaging HTTP v1: Android devices.
    case fcm
    /// Web Push (RFC 8030, with RFC 8291 message encryption and RFC 8292 VAPID): browsers.
    case webPush = "webpush"
    /// Huawei Push Kit (HMS): Android devices without Google's services.
    case hms
}

/// One push to one device token: what the relay queues, the dispatcher claims, and the provider
/// stage sends, in process or through `herald provider`'s batch API.
///
/// The network-specific parts are typed (`Payload`), so a push is checked where it is made and
/// never re-parsed on its way out.
@MemberwiseInit
public struct Push: Sendable, Hashable {
    /// The relay's push id; results answer it.
    public var id: String
    /// The APNs device token (64 hex characters), the FCM registration token, the Web Push
    /// subscription's endpoint (an HTTPS URL), or the Huawei Push Kit token.
    public var token: String
    /// What the network receives, and how.
    public var payload: Payload
    /// When the push stops being worth delivering, in seconds since the epoch: APNs'
    /// `apns-expiration` (0: now or never), the end of FCM's `android.ttl`. `nil`: the network's
    /// own policy (APNs stores it at its discretion, FCM keeps it four weeks).
    public var expiration: Int64?
    /// `apns-collapse-id` (at most 64 bytes), FCM's `collapse_key`, or Web Push's `Topic` (at most
    /// 32 base64url characters; the Web Push sender checks it).
    public var collapseID: String?
    /// The W3C `traceparent` of the span this push's attempt belongs under (the dispatcher's
    /// claim), when tracing is on and the push was traced; nil otherwise (docs/tracing.md).
    public var traceParent: String?

    /// The network this push goes through.
    public var network: PushNetwork { payload.network }

    /// A push's network-specific part.
    public enum Payload: Sendable, Hashable {
        case apns(APNsPayload)
        case fcm(FCMPayload)
        case webPush(WebPushPayload)
        case hms(HMSPayload)

        /// The network this payload is for.
        public var network: PushNetwork {
            switch self {
            case .apns: .apns
            case .fcm: .fcm
            case .webPush: .webPush
            case .hms: .hms
            }
        }
    }
}

/// What APNs receives: the request headers Herald sets and the JSON body.
@MemberwiseInit
public struct APNsPayload: Sendable, Hashable {
    /// `apns-topic`: the bundle id, or `<bundle>.voip` for VoIP pushes.
    public var topic: String
    /// `apns-push-type`.
    public var type: APNsPushType
    /// `apns-priority`.
    public var priority: APNsPriority
    /// `apns-id`: chosen once and kept across every attempt and restart, so APNs and logs see one push.
    public var apnsID: String
    /// The JSON body, as text.
    public var json: String
    /// The name of the configured APNs key (and team) that signs it; nil: the provider's default key.
    public var key: String?
    /// The APNs environment its device token belongs to, which decides the host; nil: the key's
    /// configured environment.
    public var environment: APNsEnvironment?
}

/// APNs' two environments: a device token belongs to one of them (a debug build's to
/// development, a store or TestFlight build's to production), and only that one's host accepts it.
public enum APNsEnvironment: String, Sendable, Hashable, Codable, CaseIterable {
    /// `api.sandbox.push.apple.com`.
    case development
    /// `api.push.apple.com`.
    case production
}

/// What FCM receives: a data message (string keys and values) with its Android options.
@MemberwiseInit
public struct FCMPayload: Sendable, Hashable {
    /// The app's package name (informational: FCM routes by token).
    public var package: String
    /// `android.priority`.
    public var priority: FCMPriority
    /// The data: at most 4096 bytes of keys and values, as FCM counts them.
    public var data: [String: String]
    /// The name of the configured service account (Firebase project) that sends it; nil: the
    /// provider's default account.
    public var account: String?
}

/// FCM's `android.priority`.
public enum FCMPriority: String, Sendable, Hashable, Codable {
    /// May wait for the device's Doze maintenance window.
    case normal = "NORMAL"
    /// Wakes the device at once: calls and user-visible messages.
    case high = "HIGH"
}

/// What became of one push at its network, after the sender's own retries.
public enum PushOutcome: Sendable, Hashable {
    /// The network accepted it. `receipt`: the network's id for it when it gives one
    /// (`apns-unique-id` in APNs' development environment, FCM's message name).
    case delivered(receipt: String?)
    /// The token is dead and should be dropped: APNs 410 (Unregistered, ExpiredToken),
    /// DeviceTokenNotForTopic; FCM UNREGISTERED. (APNs' BadDeviceToken is `failed`: it also
    /// answers a live token sent to the other environment.) `since`: when the network learned
    /// it, in milliseconds since the epoch (APNs' 410 timestamp).
    case tokenDead(reason: String, since: Int64?)
    /// Refused for good: another attempt would be refused the same way. `status` is the network's
    /// HTTP status, or the provider's when it refused the push itself.
    case failed(reason: String, status: Int?)
    /// Not delivered yet but worth another attempt, no sooner than `after` when the network said
    /// so (429 or 503 with `Retry-After`).
    case retryLater(reason: String, after: Duration? = nil)
    /// The network could not be reached at all (no connection could be made, the TLS handshake
    /// failed, the provider stage did not answer): the push was not tried and is not at fault.
    /// The relay holds the network's pushes until it answers again instead of backing each off.
    case unreachable(reason: String)
    /// Its expiration passed before it could be delivered.
    case expired

    /// The outcome's kind, without its details: a closed set of names for logs, metrics and the
    /// batch API.
    public var kind: Kind {
        switch self {
        case .delivered: .delivered
        case .tokenDead: .tokenDead
        case .failed: .failed
        case .retryLater: .retryLater
        case .unreachable: .unreachable
        case .expired: .expired
        }
    }

    /// An outcome's kind, with its name on the wire.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case delivered
        case tokenDead = "token_dead"
        case failed
        case retryLater = "retry_later"
        case unreachable
        case expired
    }
}

/// Sends pushes to their networks: the provider stage in process, or a remote `herald provider`.
public protocol PushSender: Sendable {
    /// Sends every push and answers one outcome per push, in order. Never throws: a network that
    /// cannot be reached is an `unreachable` outcome, other trouble a `retryLater` one.
    func send(_ pushes: [Push]) async -> [PushOutcome]
}
