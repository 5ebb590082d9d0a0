public import HeraldAPNsCore
import HeraldClientSupport
import HeraldMacros

/// What became of a push, after the client's own retries.
public enum APNsResult: Sendable, Equatable {
    /// APNs accepted it (200).
    case delivered(apnsID: String, uniqueID: String?)
    /// The device token is dead: 410 Unregistered or ExpiredToken (with Apple's timestamp in
    /// milliseconds), DeviceTokenNotForTopic. The token should be dropped; the
    /// feedback handler has been told.
    case tokenDead(reason: APNsReason, timestamp: Int64?)
    /// APNs refused it and will refuse it again: a 400 or 413 reason, or a 403 configuration
    /// error (the latter also logged as an error for the operator).
    case failed(reason: APNsReason?, status: Int)
    /// Not delivered yet, but worth sending again later (429, 500, 503, connection trouble)
    /// once the client's own attempts ran out; no sooner than `after` when the client knows a
    /// later attempt cannot succeed before then (TooManyProviderTokenUpdates).
    case retryLater(reason: String, after: Duration? = nil)
    /// No connection to APNs could be made (refused, timed out, or the TLS handshake failed on
    /// every connection): APNs never saw the push. Answered at once rather than after the
    /// client's own attempts, so the relay can hold the backlog until APNs answers again.
    case unreachable(reason: String)
    /// The push's expiration passed before it could be delivered.
    case expired

    /// Whether APNs has it.
    public var isDelivered: Bool {
        if case .delivered = self { return true }
        return false
    }
}

/// Told to the feedback handler when APNs says a device token is dead.
@MemberwiseInit
public struct APNsTokenFeedback: Sendable, Hashable {
    public var deviceToken: String
    public var topic: String
    public var reason: APNsReason
    /// For 410: when APNs learned the token was no longer valid, in milliseconds since the epoch.
    public var timestamp: Int64?
}

/// How an APNs answer is handled.
typealias APNsClassification = AnswerClassification

extension AnswerClassification {
    /// Sorts APNs's answer.
    init(status: Int, reason: APNsReason?) {
        switch (status, reason) {
        case (200, _): self = .delivered
        // BadDeviceToken is not among them: APNs also answers it for a live token sent to the
        // other environment's host, which a token of that environment would reach (docs/provider.md).
        case (410, _), (_, .deviceTokenNotForTopic?), (_, .unregistered?), (_, .expiredToken?):
            self = .tokenDead
        case (403, .expiredProviderToken?): self = .refreshTokenAndRetry
        case (403, _): self = .configuration
        case (429, _), (500, _), (503, _): self = .retry
        case (500...599, _): self = .retry
        default: self = .permanent
        }
    }
}
