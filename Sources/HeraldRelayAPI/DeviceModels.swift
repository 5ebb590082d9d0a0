public import HeraldDomain
import HeraldMacros
public import HeraldPush

/// `POST /v1/activations`: a device asks for push, with its half of the key agreement.
@MemberwiseInit
public struct ActivationRequest: Sendable, Codable, Hashable {
    public var userID: String
    /// The app's bundle id.
    public var app: String
    public var platform: DevicePlatform
    /// The device's `crypto_kx` public key, base64 (32 bytes).
    public var publicKey: String
    public var messagingToken: String?
    public var voipToken: String?
    /// Set to re-activate (rotate the keys of) an existing device.
    public var deviceID: String?
    /// iOS: the APNs environment the tokens belong to (a debug build's are `development`, a
    /// TestFlight or App Store build's `production`); absent: the app's, else the relay's default.
    public var apnsEnvironment: APNsEnvironment?
    /// A browser (`web`): its push subscription, in place of a messaging token.
    public var subscription: WebPushSubscriptionBody? = nil

    enum CodingKeys: String, CodingKey, CaseIterable {
        case userID = "user_id"
        case app, platform
        case publicKey = "public_key"
        case messagingToken = "messaging_token"
        case voipToken = "voip_token"
        case deviceID = "device_id"
        case apnsEnvironment = "apns_environment"
        case subscription
    }
}

/// `GET /v1/apps/{id}/web-push`: what a browser of the app subscribes with.
@MemberwiseInit
public struct WebPushAppView: Sendable, Codable, Hashable {
    public var app: String
    /// The name of the VAPID key that signs the app's pushes.
    public var vapidKey: String
    /// The key's public half, base64url (65 bytes): `PushManager.subscribe`'s
    /// `applicationServerKey`.
    public var applicationServerKey: String

    enum CodingKeys: String, CodingKey {
        case app
        case vapidKey = "vapid_key"
        case applicationServerKey = "application_server_key"
    }
}

/// A browser's push subscription as `PushSubscription.toJSON()` gives it: the endpoint its push
/// service minted and the keys RFC 8291 encrypts for (base64url).
@MemberwiseInit
public struct WebPushSubscriptionBody: Sendable, Codable, Hashable {
    public var endpoint: String
    public var keys: Keys
    /// When the subscription expires (milliseconds since the epoch), if the push service says.
    public var expirationTime: Int64? = nil

    /// `p256dh`: the browser's P-256 public key; `auth`: the 16-byte authentication secret.
    @MemberwiseInit
    public struct Keys: Sendable, Codable, Hashable {
        public var p256dh: String
        public var auth: String
    }
}

/// The answer to an activation: the relay's half, and the device's credential (shown once).
@MemberwiseInit
public struct ActivationResponse: Sendable, Codable, Hashable {
    public var deviceID: String
    public var userID: String
    public var app: String
    /// The relay's `crypto_kx` public key for this device, base64.
    public var relayPublicKey: String
    /// The key id every push sealed for this device carries, hex.
    public var keyID: String
    /// The key id before this re-activation; pushes in flight may still carry it.
    public var previousKeyID: String?
    /// The bearer credential for this device's endpoints. Stored by the relay only as a hash.
    public var deviceCredential: String
    public var contentPolicy: ContentPolicy

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case userID = "user_id"
        case app
        case relayPublicKey = "relay_public_key"
        case keyID = "key_id"
        case previousKeyID = "previous_key_id"
        case deviceCredential = "device_credential"
        case contentPolicy = "content_policy"
    }
}

/// `PUT /v1/devices/{id}/tokens`: late or refreshed tokens. An absent field is left as it is; an
/// empty string removes the token.
@MemberwiseInit
public struct TokenUpdateRequest: Sendable, Codable, Hashable {
    public var messagingToken: String?
    public var voipToken: String?
    /// A browser's renewed push subscription (its `pushsubscriptionchange`), in place of a
    /// messaging token.
    public var subscription: WebPushSubscriptionBody? = nil

    enum CodingKeys: String, CodingKey, CaseIterable {
        case messagingToken = "messaging_token"
        case voipToken = "voip_token"
        case subscription
    }
}

/// A device as the API shows it (no key material).
public struct DeviceView: Sendable, Codable, Hashable {
    public var deviceID: String
    public var userID: String
    public var app: String
    public var platform: DevicePlatform
    public var messagingToken: String?
    public var voipToken: String?
    public var keyID: String
    /// Why the last token was dropped, while the device has none.
    public var tokenDeadReason: String?
    /// iOS: the APNs environment its tokens belong to, which decides the host its pushes go to.
    public var apnsEnvironment: APNsEnvironment?
    /// Whether the user lets the app show notifications (`denied`: it gets no alerts, calls still
    /// ring). The relay always shows it; optional so older answers still decode.
    public var notifications: NotificationPermission?
    /// iOS: how often the app left a VoIP push unreported to CallKit (docs/receipts.md, "The
    /// PushKit guard"); absent when it never did. Shown by `GET /v1/devices/{id}` only.
    public var unreportedCalls: UnreportedCalls?

    public init(
        deviceID: String,
        userID: String,
        app: String,
        platform: DevicePlatform,
        messagingToken: String?,
        voipToken: String?,
        keyID: String,
        tokenDeadReason: String? = nil,
        apnsEnvironment: APNsEnvironment? = nil,
        notifications: NotificationPermission?
    ) {
        self.deviceID = deviceID
        self.userID = userID
        self.app = app
        self.platform = platform
        self.messagingToken = messagingToken
        self.voipToken = voipToken
        self.keyID = keyID
        self.tokenDeadReason = tokenDeadReason
        self.apnsEnvironment = apnsEnvironment
        self.notifications = notifications
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case userID = "user_id"
        case notifications
        case app, platform
        case messagingToken = "messaging_token"
        case voipToken = "voip_token"
        case keyID = "key_id"
        case tokenDeadReason = "token_dead_reason"
        case apnsEnvironment = "apns_environment"
        case unreportedCalls = "unreported_calls"
    }
}

/// `PUT /v1/devices/{id}/presence`: a heartbeat.
@MemberwiseInit
public struct HeartbeatRequest: Sendable, Codable, Hashable {
    /// The conversation on screen, if any.
    public var conversation: String?
    public var state: PresenceState
    /// Seconds until an `active` heartbeat counts as background (default 60).
    public var ttl: Int?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case conversation, state, ttl
    }
}

/// The answer to a heartbeat.
@MemberwiseInit
public struct PresenceView: Sendable, Codable, Hashable {
    public var deviceID: String
    public var state: PresenceState
    public var conversation: String?
    /// Milliseconds since the epoch.
    public var expiresAt: Int64

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case state, conversation
        case expiresAt = "expires_at"
    }
}
