import HeraldDomain

extension DevicePlatform {
    /// What the phone's timeline calls its messaging token.
    var messagingTokenName: String {
        switch self {
        case .android: "FCM registration token"
        case .huawei: "Push Kit token"
        case .ios, .web: "messaging token"
        }
    }
}
