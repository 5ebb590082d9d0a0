// The push model's APNs types (push type, priority) are part of every APNs API here.
@_exported public import HeraldPush

/// The request and response header names of the APNs HTTP/2 API.
public enum APNsHeader {
    public static let authorization = "authorization"
    public static let pushType = "apns-push-type"
    public static let id = "apns-id"
    public static let uniqueID = "apns-unique-id"
    public static let expiration = "apns-expiration"
    public static let priority = "apns-priority"
    public static let topic = "apns-topic"
    public static let collapseID = "apns-collapse-id"
}

/// Apple's device tokens: 32 bytes, sent as 64 hex characters.
public enum APNsDeviceToken {
    /// Whether `token` is 64 hex characters (either case), as Apple's are.
    public static func isWellFormed(_ token: Substring) -> Bool {
        token.utf8.count == 64 && token.utf8.allSatisfy { $0.isHexDigit }
    }

    /// Whether `token` is 64 hex characters (either case), as Apple's are.
    public static func isWellFormed(_ token: String) -> Bool {
        isWellFormed(token[...])
    }
}

/// `apns-id` and `apns-unique-id`: canonical UUIDs (8-4-4-4-12 hex digits, either case).
public enum APNsUUID {
    /// Whether `text` is a canonical UUID.
    public static func isCanonical(_ text: Substring) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                if byte != UInt8(ascii: "-") { return false }
            } else if !byte.isHexDigit {
                return false
            }
        }
        return true
    }
}

extension UInt8 {
    var isHexDigit: Bool {
        (self >= 0x30 && self <= 0x39) || (self >= 0x41 && self <= 0x46) || (self >= 0x61 && self <= 0x66)
    }
}
