import HeraldMacros

/// What Huawei Push Kit receives: a data message (never a notification block Huawei could read)
/// with its Android options. Push Kit carries data as one string; Herald's is a JSON object of
/// strings, as FCM's.
@MemberwiseInit
public struct HMSPayload: Sendable, Hashable {
    /// The app's package name (informational: Push Kit routes by token).
    public var package: String
    /// `android.urgency`.
    public var urgency: HMSUrgency
    /// The data: keys and values, at most `HMSPayload.maxData` bytes as JSON.
    public var data: [String: String]
    /// The name of the configured Huawei app (its OAuth client) that sends it; nil: the
    /// provider's default.
    public var account: String? = nil

    /// The largest data message Push Kit takes (4,096 bytes).
    public static let maxData = 4096
}

/// Push Kit's `android.urgency`.
public enum HMSUrgency: String, Sendable, Hashable, Codable {
    /// Delivered when the device's power policy allows.
    case normal = "NORMAL"
    /// Delivered at once: calls and user-visible messages.
    case high = "HIGH"
}
