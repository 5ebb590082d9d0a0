/// The `apns-push-type` values Apple lists, with the topic suffix each requires.
public enum APNsPushType: String, Sendable, Hashable, Codable, CaseIterable {
    case alert
    case background
    case controls
    case location
    case voip
    case complication
    case fileprovider
    case mdm
    case liveactivity
    case pushtotalk
    case widgets

    /// What `apns-topic` must end with for this push type; nil when the topic is the bundle id
    /// (or, for MDM, the MDM topic).
    public var topicSuffix: String? {
        switch self {
        case .alert, .background, .mdm: nil
        case .voip: ".voip"
        case .complication: ".complication"
        case .fileprovider: ".pushkit.fileprovider"
        case .location: ".location-query"
        case .liveactivity: ".push-type.liveactivity"
        case .pushtotalk: ".voip-ptt"
        case .widgets: ".push-type.widgets"
        case .controls: ".push-type.controls"
        }
    }

    /// The largest body APNs accepts for this type: 5120 bytes for VoIP, 4096 otherwise.
    public var payloadLimit: Int {
        self == .voip ? 5120 : 4096
    }

    /// Priorities Apple allows for this type: background pushes must not use 10.
    public func allows(_ priority: APNsPriority) -> Bool {
        switch self {
        case .background: priority != .immediate
        default: true
        }
    }
}

/// `apns-priority`.
public enum APNsPriority: Int, Sendable, Hashable, Codable, CaseIterable {
    /// 10: deliver immediately (alerts, VoIP).
    case immediate = 10
    /// 5: deliver considering the device's power (background, messaging that may wait).
    case conserve = 5
    /// 1: lowest, may be delayed or dropped.
    case low = 1
}

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
