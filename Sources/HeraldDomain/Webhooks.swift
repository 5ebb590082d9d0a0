// The vocabulary of webhook events: their types and delivery states.

/// What an app's backend is told of, by signed webhook: a push's fate, a chat customer going
/// offline and coming back, a call's state changes, a callback's actions.
public enum WebhookEventType: String, Sendable, Hashable, Codable, CaseIterable {
    case pushDelivered = "push.delivered"
    case pushTokenDead = "push.token_dead"
    case pushFailed = "push.failed"
    case pushExpired = "push.expired"
    /// The phone's receipt says the notification was shown.
    case pushShown = "push.shown"
    /// The phone's receipt says it could not show the push (tampered, unknown key, out of time).
    case pushFailedOnDevice = "push.failed_on_device"
    /// The app's receipt says the user tapped the notification.
    case pushTapped = "push.tapped"
    /// A push was not shown within its app's deadline: what the relay did about it.
    case pushUnseen = "push.unseen"
    /// A VoIP push the phone did not report to CallKit in time (Apple stops VoIP pushes to an app
    /// that keeps failing to report them).
    case pushCallUnreported = "push.call_unreported"
    case chatCustomerOffline = "chat.customer_offline"
    case chatCustomerBack = "chat.customer_back"
    case callRinging = "call.ringing"
    case callAnswered = "call.answered"
    case callDeclined = "call.declined"
    case callCancelled = "call.cancelled"
    case callMissed = "call.missed"
    case callbackPushed = "callback.pushed"
    case callbackAction = "callback.action"
    case callbackExpired = "callback.expired"
    /// A device reported that its user turned notifications off: its alerts are no longer sent.
    case deviceNotificationsDenied = "device.notifications_denied"
    /// A device reported that notifications are allowed again.
    case deviceNotificationsGranted = "device.notifications_granted"
}

/// Where an event is on its way to the backend.
public enum WebhookEventState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Waiting for its turn or its next attempt.
    case pending
    /// Taken by a sender, under a lease.
    case sending
    /// The receiver answered 2xx.
    case delivered
    /// Given up on (the app's webhook was removed, or the event outlived the retry window).
    case failed
}
