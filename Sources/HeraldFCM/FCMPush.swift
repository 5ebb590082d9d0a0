public import HeraldFCMCore

/// One data message on its way to FCM.
public struct FCMPush: Sendable, Hashable {
    /// The device's registration token.
    public var token: String
    /// The data payload: string values only, at most 4096 bytes of keys and values.
    public var data: [String: String]
    /// `HIGH` for calls and user-visible messages.
    public var priority: FCMMessage.Priority
    /// When the message stops being worth delivering, in seconds since the epoch: `android.ttl`
    /// is what remains of it at each attempt, and no attempt is made after it. 0 is "now or
    /// never": `ttl` `"0s"` (FCM delivers at once or drops it) and one attempt.
    public var expiration: Int64
    /// Messages with the same key replace each other while the device is offline.
    public var collapseKey: String?

    public init(
        token: String,
        data: [String: String],
        priority: FCMMessage.Priority,
        expiration: Int64,
        collapseKey: String? = nil
    ) {
        self.token = token
        self.data = data
        self.priority = priority
        self.expiration = expiration
        self.collapseKey = collapseKey
    }

    /// "Now or never": one attempt with `ttl` `"0s"`.
    public var isNowOrNever: Bool { expiration == 0 }

    /// The message for an attempt at `now` (seconds since the epoch).
    func message(now: Int64) -> FCMMessage {
        var message = FCMMessage(token: token, data: data)
        message.android = FCMMessage.AndroidConfig(
            priority: priority,
            ttl: "\(max(0, min(expiration - now, FCMMessage.maximumTTLSeconds)))s",
            collapseKey: collapseKey
        )
        return message
    }
}

/// What became of a message, after the sender's own retries.
public enum FCMResult: Sendable, Hashable {
    /// FCM accepted it; `name` is FCM's message name (`projects/p/messages/…`).
    case delivered(name: String)
    /// The token is dead (404 UNREGISTERED): drop it.
    case tokenDead(code: FCMErrorCode)
    /// Refused for good: INVALID_ARGUMENT, SENDER_ID_MISMATCH, THIRD_PARTY_AUTH_ERROR, a
    /// permission or credential problem; also logged as an error for the operator. `message` is
    /// Google's (after the `google.rpc` status when there is no FCM code).
    case failed(code: FCMErrorCode?, status: Int, message: String)
    /// Not delivered yet but worth another attempt (QUOTA_EXCEEDED, UNAVAILABLE, INTERNAL,
    /// connection trouble), no sooner than `retryAfter` when FCM said so.
    case retryLater(reason: String, retryAfter: Duration?)
    /// No connection to FCM (or to its token endpoint) could be made: the message was not sent.
    /// Answered after the first such attempt, so the relay can hold its backlog until FCM answers.
    case unreachable(reason: String)
    /// Its expiration passed before it could be delivered.
    case expired
}
