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
