public import HeraldDomain
import HeraldMacros
public import HeraldPush

/// `GET /v1/users/{id}/devices`: the user's devices, oldest activation first. A user the relay
/// has no device for answers an empty list: users are not registered with the relay, they exist
/// through their devices.
@MemberwiseInit
public struct UserDevicesView: Sendable, Codable, Hashable {
    public var userID: String
    public var devices: [UserDeviceView]

    enum CodingKeys: String, CodingKey {
        case userID = "user_id"
        case devices
    }
}

/// One device as an operator sees it: which app and platform, since when, whether it has its
/// tokens (never the tokens themselves, nor any key) and its last heartbeat.
@MemberwiseInit
public struct UserDeviceView: Sendable, Codable, Hashable {
    public var deviceID: String
    public var app: String
    public var platform: DevicePlatform
    /// The key agreement's id (a hash, not a key).
    public var keyID: String
    /// Milliseconds since the epoch: the first activation (a re-activation keeps it), the last
    /// change (tokens, re-activation, a dead token dropped).
    public var activatedAt: Int64
    public var updatedAt: Int64
    /// Whether the device has a messaging token (APNs alert token or FCM registration token).
    public var hasMessagingToken: Bool
    /// Whether the device has a PushKit token (iOS only; always false on Android).
    public var hasVoIPToken: Bool
    /// Why the push network last refused one of its tokens (`Unregistered`, `BadDeviceToken`),
    /// while that token is missing.
    public var tokenDeadReason: String?
    /// The last heartbeat, if the app sent one.
    public var presence: Presence?
    /// iOS: the APNs environment its tokens belong to.
    public var apnsEnvironment: APNsEnvironment?
    /// Whether the user lets the app show notifications (`denied`: no alerts; calls still ring).
    public var notifications: NotificationPermission?

    /// A heartbeat as stored.
    @MemberwiseInit
    public struct Presence: Sendable, Codable, Hashable {
        public var state: PresenceState
        /// The conversation on screen (an id the backend chose).
        public var conversation: String?
        /// Milliseconds since the epoch; after `expiresAt` an `active` heartbeat counts as
        /// background.
        public var updatedAt: Int64
        public var expiresAt: Int64

        enum CodingKeys: String, CodingKey {
            case state, conversation
            case updatedAt = "updated_at"
            case expiresAt = "expires_at"
        }
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case app, platform
        case keyID = "key_id"
        case activatedAt = "activated_at"
        case updatedAt = "updated_at"
        case hasMessagingToken = "has_messaging_token"
        case hasVoIPToken = "has_voip_token"
        case tokenDeadReason = "token_dead_reason"
        case presence
        case apnsEnvironment = "apns_environment"
        case notifications
    }
}

/// `GET /v1/pushes`: which pushes to list, newest first. Every field is optional; those given
/// must all hold.
@MemberwiseInit
public struct PushListRequest: Sendable, Hashable {
    /// Pushes to this user's current devices.
    public var user: String?
    /// Pushes to this device.
    public var device: String?
    public var state: PushState?
    /// Pushes accepted at or after this time (milliseconds since the epoch).
    public var since: Int64?
    /// The previous page's `next`, as it was given.
    public var cursor: String?
    /// The page size, 1 to 500 (100 when not given).
    public var limit: Int?

    /// The page size when none is given.
    public static let defaultLimit = 100
}

/// The answer to `GET /v1/pushes`: a page, and where the next one starts.
@MemberwiseInit
public struct PushListView: Sendable, Codable, Hashable {
    public var pushes: [PushItemView]
    /// Pass as `cursor` for the next page; absent on the last page.
    public var next: String?
}

/// One push in a listing: where it went and what became of it, never what it carried (no
/// sender, text or envelope) nor the token it went to. `GET /v1/pushes/{id}` has its history.
public struct PushItemView: Sendable, Codable, Hashable {
    public var pushID: String
    public var deviceID: String
    /// The device's app; absent once the device is deactivated.
    public var app: String?
    public var network: PushNetwork
    public var kind: OutboxKind
    public var state: PushState
    public var attempts: Int
    /// The last reason: the push network's (`BadDeviceToken`, `UNREGISTERED`) or the relay's
    /// (`no_token`, `expired before sending`).
    public var reason: String?
    /// The `apns-id` the push is sent with; absent for FCM.
    public var apnsID: String?
    /// Milliseconds since the epoch: acceptance, last change, expiration.
    public var createdAt: Int64
    public var updatedAt: Int64
    public var expiresAt: Int64
    /// When the last attempt was answered (delivered, failed, token_dead) or began (sending);
    /// absent where the push alone does not tell (see its history).
    public var lastAttemptAt: Int64?
    /// When the push reached its final state; absent while queued or sending.
    public var finishedAt: Int64?
    /// The furthest stage the phone's receipts reached (docs/receipts.md); absent: none came.
    public var deviceStage: ReceiptStage?

    /// A push's item; when its last attempt was and when it finished follow from its state,
    /// attempts and last change.
    public init(
        pushID: String,
        deviceID: String,
        app: String?,
        network: PushNetwork,
        kind: OutboxKind,
        state: PushState,
        attempts: Int,
        reason: String?,
        apnsID: String?,
        createdAt: Int64,
        updatedAt: Int64,
        expiresAt: Int64
    ) {
        self.pushID = pushID
        self.deviceID = deviceID
        self.app = app
        self.network = network
        self.kind = kind
        self.state = state
        self.attempts = attempts
        self.reason = reason
        self.apnsID = apnsID
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.expiresAt = expiresAt
        switch state {
        case .sending, .delivered, .failed, .tokenDead:
            lastAttemptAt = attempts > 0 ? updatedAt : nil
        case .queued, .expired, .skipped:
            lastAttemptAt = nil
        }
        finishedAt = state.isFinal ? updatedAt : nil
    }

    enum CodingKeys: String, CodingKey {
        case pushID = "push_id"
        case deviceID = "device_id"
        case app, network, kind, state, attempts, reason
        case apnsID = "apns_id"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case expiresAt = "expires_at"
        case lastAttemptAt = "last_attempt_at"
        case finishedAt = "finished_at"
        case deviceStage = "device_stage"
    }
}
