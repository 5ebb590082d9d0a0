// The vocabulary of pushes: which push a device gets and where it is in its life.

/// Which push a device gets: a notification, a call, or a callback's dialog.
public enum OutboxKind: String, Sendable, Hashable, Codable, CaseIterable {
    case message
    case call
    /// The alert telling a device it missed a call (a messaging push: the messaging token).
    case missedCall = "missed_call"
    /// A callback's actionable alert (`CallbackStore`); its subject is the callback id.
    case callback
}

/// Where a push is in its life.
public enum PushState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Accepted and durable; waiting for the dispatcher (or for its next attempt).
    case queued
    /// Claimed by a dispatcher and handed to the provider.
    case sending
    /// The push network accepted it.
    case delivered
    /// Refused for good (the reason says why).
    case failed
    /// Its expiration passed before it could be delivered.
    case expired
    /// The device token is dead; the token was dropped.
    case tokenDead = "token_dead"
    /// Never sent: the device had no usable token or was deactivated.
    case skipped

    /// No further attempt will be made.
    public var isFinal: Bool {
        switch self {
        case .queued, .sending: false
        case .delivered, .failed, .expired, .tokenDead, .skipped: true
        }
    }
}
