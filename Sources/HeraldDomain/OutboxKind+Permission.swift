extension OutboxKind {
    /// Whether the push shows a notification, which the user must allow (`NotificationPermission`):
    /// messages, missed-call alerts and callbacks do; a call does not (PushKit and FCM data
    /// messages ring without it).
    public var needsNotificationPermission: Bool {
        switch self {
        case .message, .missedCall, .callback: true
        case .call: false
        }
    }
}
