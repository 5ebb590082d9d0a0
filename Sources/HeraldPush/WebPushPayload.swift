import HeraldMacros

/// What a Web Push service receives: the plaintext the browser's service worker gets (Herald's
/// JSON, which carries the sealed envelope), encrypted by the sender for the subscription with
/// RFC 8291 (`aes128gcm`) and signed for with the app's VAPID key (RFC 8292).
///
/// The subscription's endpoint is the push's `token`; its keys come with the claim, from the
/// device, so a subscription renewed while the push waited is encrypted for its new keys.
@MemberwiseInit
public struct WebPushPayload: Sendable, Hashable {
    /// The app's id: which app's VAPID key signs (`vapidKey` names another).
    public var app: String
    /// `Urgency` (RFC 8030 §5.3): `high` for calls, messages by their priority.
    public var urgency: WebPushUrgency
    /// The plaintext the service worker receives, as text: at most
    /// `WebPushPayload.maxPlaintext` bytes.
    public var json: String
    /// The subscription's keys (`p256dh`, `auth`); nil until the claim adds the device's.
    public var keys: WebPushKeys? = nil
    /// The name of the configured VAPID key that signs; nil: the provider's default key.
    public var vapidKey: String? = nil

    /// The largest plaintext that fits a Web Push service's 4,096-byte body once encrypted: the
    /// RFC 8291 header (86 bytes: salt, record size, key id length, the 65-byte sender key), the
    /// padding delimiter (1) and the AES-GCM tag (16).
    public static let maxPlaintext = 4096 - 86 - 1 - 16
}

/// A push subscription's keys (RFC 8291 §3): the browser's P-256 public key and the shared
/// authentication secret.
public struct WebPushKeys: Sendable, Hashable {
    /// `p256dh`: the uncompressed P-256 point (65 bytes, 0x04 first).
    public let p256dh: [UInt8]
    /// `auth`: 16 random bytes.
    public let auth: [UInt8]

    /// The keys, when their lengths are the RFC's; nil otherwise.
    public init?(p256dh: [UInt8], auth: [UInt8]) {
        guard p256dh.count == 65, p256dh.first == 0x04, auth.count == 16 else { return nil }
        self.p256dh = p256dh
        self.auth = auth
    }

    /// The keys as one value (`p256dh` ‖ `auth`, 81 bytes), as a store keeps them.
    public var bytes: [UInt8] { p256dh + auth }

    /// The keys from `bytes`; nil when the value is not 81 bytes of valid keys.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 81 else { return nil }
        self.init(p256dh: Array(bytes[0..<65]), auth: Array(bytes[65...]))
    }
}

/// RFC 8030 §5.3 `Urgency`: how soon the browser's device should wake for the push.
public enum WebPushUrgency: String, Sendable, Hashable, Codable, CaseIterable {
    case veryLow = "very-low"
    case low
    case normal
    case high
}
