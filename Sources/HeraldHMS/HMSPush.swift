public import HeraldHMSCore
import HeraldMacros

/// One data message on its way to Push Kit.
@MemberwiseInit
public struct HMSPush: Sendable, Hashable {
    /// The device's Push Kit token (`message.token`, the only one in its request: Herald sends
    /// each device its own sealed data).
    public var token: String
    /// The package, urgency and data (Herald's sealed JSON).
    public var payload: HMSPayload
    /// When the message stops being worth delivering, in seconds since the epoch: `android.ttl`
    /// is what remains of it at each attempt, and no attempt is made after it. 0 is "now or
    /// never": `ttl` `"0s"` and one attempt.
    public var expiration: Int64
    /// "Now or never": one attempt with `ttl` `"0s"`.
    public var isNowOrNever: Bool { expiration == 0 }
    /// Messages with the same key replace each other while the device is offline (Push Kit's
    /// group `HMSMessage.collapseGroup(for:)`).
    public var collapseKey: String? = nil

    /// The message for an attempt at `now` (seconds since the epoch).
    func message(now: Int64, category: String?) -> HMSMessage {
        HMSMessage(
            payload: payload,
            token: token,
            ttlSeconds: expiration - now,
            collapseKey: collapseKey,
            category: payload.urgency == .high ? category : nil
        )
    }
}

/// What became of a message, after the sender's own retries. (`PushOutcome(_:)` maps it for
/// the provider stage.)
public enum HMSResult: Sendable, Hashable {
    /// Push Kit took it; `requestID` is Huawei's `requestId` for the send.
    case delivered(requestID: String)
    /// Its expiration passed before Push Kit took it.
    case expired
    /// Worth sending again later (flow control, an internal error, connection trouble), no sooner
    /// than `retryAfter` when Huawei said so.
    case retryLater(reason: String, retryAfter: Duration?)
    /// Push Kit called the token invalid (80300007, or listed in a partial success): drop it.
    case tokenDead(code: HMSResultCode)
    /// Neither Push Kit nor its token endpoint could be reached: the message was not sent.
    /// Answered after the first such attempt, so the relay can hold its backlog until Huawei
    /// answers again.
    case unreachable(reason: String)
    /// Refused for good (a malformed or oversized message, the app's credentials or permission);
    /// logged for the operator too. `code` is nil when Push Kit gave none Herald knows.
    case failed(code: HMSResultCode?, status: Int, message: String)
}

/// Told to the feedback handler when Push Kit says a token is dead.
@MemberwiseInit
public struct HMSTokenFeedback: Sendable, Hashable {
    public var token: String
    public var code: HMSResultCode

    /// What `HMSClient` calls with it, once per dead token, before `send` returns.
    public typealias Handler = @Sendable (HMSTokenFeedback) async -> Void
}

extension PushOutcome {
    /// What the Push Kit sender made of a message, for the provider stage: a dead token's reason
    /// is its code and Huawei's words for it.
    public init(_ result: HMSResult) {
        self =
            switch result {
            case .delivered(let requestID): .delivered(receipt: requestID)
            case .expired: .expired
            case .retryLater(let reason, let retryAfter): .retryLater(reason: reason, after: retryAfter)
            case .tokenDead(let code): .tokenDead(reason: "\(code.text): \(code.defaultMessage)", since: nil)
            case .unreachable(let reason): .unreachable(reason: reason)
            case .failed(let code?, let status, let message):
                .failed(reason: "\(code.text): \(message)", status: status)
            case .failed(nil, let status, let message): .failed(reason: message, status: status)
            }
    }
}
