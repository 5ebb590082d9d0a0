public import HeraldAPNsCore
import HeraldMacros

/// A device the sandbox has issued tokens to, as the control API shows it.
public struct SandboxDevice: Sendable, Hashable, Codable {
    public var deviceID: String
    /// The app's bundle id (iOS) or package name (Android).
    public var bundleID: String
    /// `ios` (APNs tokens) or `android` (an FCM registration token).
    public var platform: SandboxPlatform
    /// For Android, the Firebase project its registration token belongs to; for Huawei, the
    /// Huawei app id its Push Kit token belongs to; nil for iOS.
    public var projectID: String?
    /// The messaging token once its retrieval delay has passed, nil before: an APNs device token
    /// (iOS) or an FCM registration token (Android).
    public var messagingToken: String?
    /// The VoIP (PushKit) token, once its retrieval delay has passed; nil before, and always nil
    /// for Android.
    public var voipToken: String?
    /// Milliseconds until the messaging token is handed out; 0 when it has been.
    public var messagingTokenReadyInMs: Int64
    /// Milliseconds until the VoIP token is handed out; 0 when it has been.
    public var voipTokenReadyInMs: Int64
    /// Whether a device connection is open.
    public var connected: Bool
    /// iOS: the APNs environment its tokens belong to (`development`, as a debug build's, unless
    /// registered as `production`); nil for Android.
    public var apnsEnvironment: APNsEnvironment?

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case bundleID = "bundle_id"
        case platform
        case projectID = "project_id"
        case messagingToken = "messaging_token"
        case voipToken = "voip_token"
        case messagingTokenReadyInMs = "messaging_token_ready_in_ms"
        case voipTokenReadyInMs = "voip_token_ready_in_ms"
        case connected
        case apnsEnvironment = "apns_environment"
    }
}

// In an extension, so that Swift still writes the memberwise initializer the registry builds
// devices with.
extension SandboxDevice {
    /// Reads a device; one without `platform` (from an older sandbox) is an iOS device.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        deviceID = try container.decode(String.self, forKey: .deviceID)
        bundleID = try container.decode(String.self, forKey: .bundleID)
        platform = try container.decodeIfPresent(SandboxPlatform.self, forKey: .platform) ?? .ios
        projectID = try container.decodeIfPresent(String.self, forKey: .projectID)
        messagingToken = try container.decodeIfPresent(String.self, forKey: .messagingToken)
        voipToken = try container.decodeIfPresent(String.self, forKey: .voipToken)
        messagingTokenReadyInMs = try container.decode(Int64.self, forKey: .messagingTokenReadyInMs)
        voipTokenReadyInMs = try container.decode(Int64.self, forKey: .voipTokenReadyInMs)
        connected = try container.decode(Bool.self, forKey: .connected)
    }
}

/// Which of a device's two tokens.
public enum SandboxTokenKind: String, Sendable, Hashable, Codable {
    case messaging
    case voip
}

/// A notification as the sandbox delivers it to a device.
public struct SandboxNotification: Sendable, Hashable, Codable {
    public var apnsID: String
    public var token: String
    public var topic: String
    public var pushType: APNsPushType
    public var priority: Int
    /// `apns-expiration` in seconds since the epoch; nil when absent, 0 for "try once".
    public var expiration: Int64?
    public var collapseID: String?
    /// The JSON body exactly as the provider sent it.
    public var payload: String
    /// When the sandbox accepted it, in milliseconds since the epoch.
    public var acceptedAt: Int64

    enum CodingKeys: String, CodingKey {
        case apnsID = "apns_id"
        case token, topic
        case pushType = "push_type"
        case priority, expiration
        case collapseID = "collapse_id"
        case payload
        case acceptedAt = "accepted_at"
    }
}

/// What the device connection carries to an emulated device.
public enum SandboxDeviceEvent: Sendable, Hashable {
    /// A token became available to the device (after its retrieval delay).
    case token(kind: SandboxTokenKind, token: String)
    /// A notification was delivered.
    case notification(SandboxNotification)
    /// An FCM message was delivered (Android devices).
    case fcmMessage(SandboxFCMMessage)
    /// A Push Kit data message was delivered (Huawei devices).
    case hmsMessage(SandboxHMSMessage)
    /// A Web Push message was delivered (web devices).
    case webPush(SandboxWebPushMessage)
}

extension SandboxDeviceEvent: Codable {
    private enum CodingKeys: String, CodingKey {
        case type, kind, token, notification, message
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(String.self, forKey: .type) {
        case "token":
            self = .token(
                kind: try container.decode(SandboxTokenKind.self, forKey: .kind),
                token: try container.decode(String.self, forKey: .token)
            )
        case "notification":
            self = .notification(try container.decode(SandboxNotification.self, forKey: .notification))
        case "fcm_message":
            self = .fcmMessage(try container.decode(SandboxFCMMessage.self, forKey: .message))
        case "hms_message":
            self = .hmsMessage(try container.decode(SandboxHMSMessage.self, forKey: .message))
        case "web_push":
            self = .webPush(try container.decode(SandboxWebPushMessage.self, forKey: .message))
        case let other:
            throw DecodingError.dataCorruptedError(
                forKey: .type,
                in: container,
                debugDescription: "unknown device event type \(other)"
            )
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .token(let kind, let token):
            try container.encode("token", forKey: .type)
            try container.encode(kind, forKey: .kind)
            try container.encode(token, forKey: .token)
        case .notification(let notification):
            try container.encode("notification", forKey: .type)
            try container.encode(notification, forKey: .notification)
        case .fcmMessage(let message):
            try container.encode("fcm_message", forKey: .type)
            try container.encode(message, forKey: .message)
        case .hmsMessage(let message):
            try container.encode("hms_message", forKey: .type)
            try container.encode(message, forKey: .message)
        case .webPush(let message):
            try container.encode("web_push", forKey: .type)
            try container.encode(message, forKey: .message)
        }
    }
}

/// One request the APNs listener answered, for tests and `herald simulate` to assert on.
public struct SandboxInspectionRecord: Sendable, Hashable, Codable {
    /// Increases by one per request; survives the log dropping old records.
    public var sequence: Int
    /// Milliseconds since the epoch.
    public var receivedAt: Int64
    public var method: String
    public var path: String
    public var token: String?
    public var topic: String?
    public var pushType: String?
    public var priority: String?
    public var expiration: String?
    public var collapseID: String?
    /// The apns-id answered (the request's, or the one the sandbox made).
    public var apnsID: String
    /// The provider token's key id and team, when one was sent and parsed.
    public var keyID: String?
    public var teamID: String?
    /// The body as text (the APNs payload), as the provider sent it.
    public var payload: String
    /// The answered status; 0 when the connection was dropped or stalled instead.
    public var status: Int
    public var reason: String?
    /// What the sandbox did: `accepted`, `rejected`, `injected` (a respond fault), `drop`, `goaway`, `stall`.
    public var outcome: String
    /// Whether an accepted notification went straight to a connected device, was stored, or discarded.
    public var delivery: String?
    /// The APNs environment of the listener the request came to (`development` or `production`).
    public var environment: APNsEnvironment = .development

    enum CodingKeys: String, CodingKey {
        case environment
        case sequence
        case receivedAt = "received_at"
        case method, path, token, topic
        case pushType = "push_type"
        case priority, expiration
        case collapseID = "collapse_id"
        case apnsID = "apns_id"
        case keyID = "key_id"
        case teamID = "team_id"
        case payload, status, reason, outcome, delivery
    }
}

/// An injected fault: what the next matching requests get instead of the normal answer.
@MemberwiseInit
public struct SandboxFault: Sendable, Hashable, Codable {
    public enum Action: String, Sendable, Hashable, Codable {
        /// Answer with `status` and `reason`.
        case respond
        /// Close the TCP connection without answering.
        case drop
        /// Refuse this stream (REFUSED_STREAM), send GOAWAY (with `reason` in its debug data),
        /// answer the streams it covers, then close.
        case goaway
        /// Never answer; the stream stays open until the client gives up or disconnects.
        case stall
    }

    public var action: Action = .respond
    /// For `respond`: the status; defaults to the reason's documented status.
    public var status: Int?
    /// For `respond` and `goaway`: an APNs reason.
    public var reason: APNsReason?
    /// How many matching requests get the fault.
    public var count: Int = 1
    /// Only requests to this device token.
    public var token: String?
    /// Only requests with this `apns-topic`.
    public var topic: String?

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        action = try container.decodeIfPresent(Action.self, forKey: .action) ?? .respond
        status = try container.decodeIfPresent(Int.self, forKey: .status)
        reason = try container.decodeIfPresent(APNsReason.self, forKey: .reason)
        count = try container.decodeIfPresent(Int.self, forKey: .count) ?? 1
        token = try container.decodeIfPresent(String.self, forKey: .token)
        topic = try container.decodeIfPresent(String.self, forKey: .topic)
    }

    func matches(token: String?, topic: String?) -> Bool {
        (self.token == nil || self.token == token) && (self.topic == nil || self.topic == topic)
    }
}
