import HeraldEncoding
import HeraldMacros
// The push model's FCM priority is part of the message API here.
@_exported public import HeraldPush

/// The body of `POST /v1/projects/{project}/messages:send`: `{"message": {...}}`.
public struct FCMSendRequest: Sendable, Hashable, Codable {
    public var validateOnly: Bool?
    public var message: FCMMessage

    public init(message: FCMMessage, validateOnly: Bool? = nil) {
        self.message = message
        self.validateOnly = validateOnly
    }

    enum CodingKeys: String, CodingKey {
        case validateOnly = "validate_only"
        case message
    }
}

/// A data message to one registration token, with its Android delivery options: what Herald
/// sends (the sealed content travels in `data`, never in a `notification` block Google could read).
public struct FCMMessage: Sendable, Hashable, Codable {
    /// The registration token of the app instance.
    public var token: String?
    /// A topic name; the sandbox does not deliver topic messages.
    public var topic: String?
    /// A condition over topics; the sandbox does not deliver conditional messages.
    public var condition: String?
    /// Key-value pairs, string values only, at most `FCMMessage.maximumDataBytes` in all.
    public var data: [String: String]?
    public var android: AndroidConfig?

    /// FCM's limit on a data message's keys and values together.
    public static let maximumDataBytes = 4096
    /// The longest `android.ttl` FCM accepts: 28 days.
    public static let maximumTTLSeconds: Int64 = 28 * 24 * 60 * 60

    public init(token: String, data: [String: String], android: AndroidConfig? = nil) {
        self.token = token
        self.data = data
        self.android = android
    }

    /// `message.android`.
    @MemberwiseInit
    public struct AndroidConfig: Sendable, Hashable, Codable {
        /// `HIGH` wakes the device at once (calls, user-visible messages); `NORMAL` may wait for Doze.
        public var priority: Priority?
        /// How long FCM keeps the message for an offline device: a duration in seconds with an
        /// `s` suffix (`"86400s"`); `"0s"` means now or never.
        public var ttl: String?
        /// Messages with the same key replace each other while the device is offline.
        public var collapseKey: String?

        enum CodingKeys: String, CodingKey {
            case priority, ttl
            case collapseKey = "collapse_key"
        }
    }

    /// `message.android.priority`: the push model's own type.
    public typealias Priority = FCMPriority

    /// The data payload's size as FCM counts it: the UTF-8 bytes of every key and value.
    public var dataBytes: Int {
        (data ?? [:]).reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
    }

    /// Checks the message against FCM's rules for the fields Herald uses.
    public func validate() throws(FCMValidationError) {
        let targets = [token, topic, condition].compactMap { $0 }
        guard targets.count == 1 else {
            throw FCMValidationError(field: "message", "exactly one of token, topic or condition must be set")
        }
        if let token, token.isEmpty || !token.utf8.allSatisfy(Self.isTokenByte) {
            throw FCMValidationError(
                field: "message.token",
                "The registration token is not a valid FCM registration token"
            )
        }
        for key in (data ?? [:]).keys {
            let lowered = key.lowercased()
            if key.isEmpty || ["from", "message_type"].contains(lowered) || lowered.hasPrefix("google")
                || lowered.hasPrefix("gcm")
            {
                throw FCMValidationError(field: "message.data", "Invalid data payload key: \(key)")
            }
        }
        if dataBytes > Self.maximumDataBytes {
            throw FCMValidationError(
                field: "message.data",
                "Message is too big: the data payload has \(dataBytes) bytes, the limit is \(Self.maximumDataBytes)"
            )
        }
        if let ttl = android?.ttl {
            guard let seconds = Self.seconds(ttl: ttl) else {
                throw FCMValidationError(
                    field: "message.android.ttl",
                    "Invalid value at 'message.android.ttl' (\(ttl))"
                )
            }
            guard seconds <= Self.maximumTTLSeconds else {
                throw FCMValidationError(field: "message.android.ttl", "TTL cannot be longer than 28 days")
            }
        }
        if let key = android?.collapseKey, key.isEmpty {
            throw FCMValidationError(field: "message.android.collapse_key", "collapse_key must not be empty")
        }
    }

    /// Whole seconds of a protobuf `Duration` in JSON form (`"30s"`, `"3.5s"`); nil if malformed.
    public static func seconds(ttl: String) -> Int64? { DurationText.seconds(ttl) }

    /// Registration tokens are URL-safe text with a `:` between the instance id and the rest.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":")
    }
}

/// A message FCM would refuse with 400 INVALID_ARGUMENT, and the field at fault.
public struct FCMValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    public let field: String
    public let message: String

    public init(field: String, _ message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { "\(field): \(message)" }
}
