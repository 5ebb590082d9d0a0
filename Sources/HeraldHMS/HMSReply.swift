import Foundation
import HeraldClientSupport
import HeraldHMSCore

/// Push Kit's answer to one `messages:send`, as the sender reads it.
struct HMSReply {
    var status: Int
    /// The JSON body, when it was one.
    var answer: HMSSendAnswer?
    var retryAfter: Duration?

    init(status: Int, answer: HMSSendAnswer?, retryAfter: Duration? = nil) {
        self.status = status
        self.answer = answer
        self.retryAfter = retryAfter
    }

    init(_ reply: HTTPAnswer) {
        self.init(
            status: reply.status,
            answer: try? JSONDecoder().decode(HMSSendAnswer.self, from: reply.body),
            retryAfter: reply.retryAfter
        )
    }

    var code: HMSResultCode? { answer?.resultCode }

    var summary: String {
        guard let answer else { return "HTTP \(status)" }
        return "\(answer.code) (\(status)): \(answer.msg)"
    }

    /// How the answer is handled for the message to `token`: flow control (503, 429) first,
    /// whatever the body; then the result code; a partial success is dead for a listed token.
    func classification(token: String) -> AnswerClassification {
        if status == 503 || status == 429 { return .retry }
        guard let code else {
            return (500...599).contains(status) ? .retry : .permanent
        }
        switch code.meaning {
        case .delivered:
            return code == .partialSuccess && answer?.illegalTokens.contains(token) == true ? .tokenDead : .delivered
        case .tokenDead: return .tokenDead
        case .retry: return .retry
        case .refreshTokenAndRetry: return .refreshTokenAndRetry
        case .failed: return code.isConfiguration ? .configuration : .permanent
        }
    }
}
