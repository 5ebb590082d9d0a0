/// How a push network's answer to one request is handled, whichever network gave it: the APNs
/// client and the FCM sender each sort their network's statuses and reasons into these, and act
/// on them alike.
public enum AnswerClassification: Equatable, Sendable {
    /// The network took the push.
    case delivered
    /// The token is no longer the device's: finish the push and forget the token.
    case tokenDead
    /// The credential (provider token, access token) was refused as stale: renew it and send again.
    case refreshTokenAndRetry
    /// A passing failure: send again after a backoff.
    case retry
    /// This push can never go as it is.
    case permanent
    /// The sender's setup is at fault (key, team, project): no push of it will go until it is fixed.
    case configuration
}
