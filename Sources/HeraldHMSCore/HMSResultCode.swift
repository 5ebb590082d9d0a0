import Foundation
import HeraldMacros

// Push Kit's result codes, each with the HTTP status Huawei answers it with. Confirmed against
// Huawei's notes on its common server errors (https://segmentfault.com/a/1190000042188975/en:
// 80200001, 80300007, 80300010), Huawei's Push Kit FAQ
// (https://developer.huawei.com/consumer/cn/doc/harmonyOS-faqs/push-kit-faq-0001/: 80300007 with
// its list of illegal tokens) and a send that got 80300002 for a wrong app id
// (https://www.wangyeyixia.com/article/1852871.html); the others as the lead's brief gives them
// from the send API's reference. Flow control is HTTP 503 or 429, whatever the body says.

/// The `code` of a `messages:send` answer, grouped by what it says: the message was taken
/// (80000000 by every token; 80100000 by some, `msg` listing the others); the message is wrong
/// (80100001 a parameter, 80100003 its structure, 80100004 its ttl, 80300008 too large, 80300010
/// 0 or more than 1,000 tokens); the credentials (80200001 missing, malformed or another app's
/// access token, 80200003 an expired one, 80300002 no permission for these tokens); every token
/// is invalid (80300007); Push Kit failed inside (81000001). `defaultMessage` words each.
public enum HMSResultCode: Sendable, Hashable, CaseIterable {
    case success, partialSuccess
    case invalidParameters, badMessageStructure, invalidTTL, bodyTooLarge, tooManyTokens
    case oauthAuthenticationError, oauthTokenExpired, noPermission
    case allTokensInvalid
    case internalError

    private static let numbers: [HMSResultCode: Int] = [
        .success: 80_000_000, .partialSuccess: 80_100_000, .invalidParameters: 80_100_001,
        .badMessageStructure: 80_100_003, .invalidTTL: 80_100_004, .oauthAuthenticationError: 80_200_001,
        .oauthTokenExpired: 80_200_003, .noPermission: 80_300_002, .allTokensInvalid: 80_300_007,
        .bodyTooLarge: 80_300_008, .tooManyTokens: 80_300_010, .internalError: 81_000_001,
    ]

    /// The code's number (80000000 …).
    public var number: Int { Self.numbers[self] ?? 0 }

    /// The code as Push Kit writes it: eight digits in a JSON string.
    public var text: String { String(number) }

    /// The code Push Kit wrote; nil for one this type does not know.
    public init?(text: String) {
        guard let code = Self.numbers.first(where: { String($0.value) == text })?.key else { return nil }
        self = code
    }

    /// What a code means for the push it answers.
    public enum Meaning: Sendable, Hashable {
        /// Push Kit took the push (for a partial success: unless its token is listed).
        case delivered
        /// Its token is dead: forget it.
        case tokenDead
        /// Refused for good: the push, or the sender's setup, must change.
        case failed
        /// A passing failure: send again after a backoff.
        case retry
        /// The access token lapsed: get a new one and send again.
        case refreshTokenAndRetry
    }

    public var meaning: Meaning {
        switch self {
        case .success, .partialSuccess: .delivered
        case .allTokensInvalid: .tokenDead
        case .internalError: .retry
        case .oauthTokenExpired: .refreshTokenAndRetry
        case .invalidParameters, .badMessageStructure, .invalidTTL, .oauthAuthenticationError, .noPermission,
            .bodyTooLarge, .tooManyTokens:
            .failed
        }
    }

    /// Whether the sender's setup (credentials, app id), not the push, is at fault.
    public var isConfiguration: Bool { self == .oauthAuthenticationError || self == .noPermission }

    /// The HTTP status Push Kit answers this code with.
    public var status: Int {
        switch self {
        case .success, .partialSuccess: 200
        case .invalidParameters, .badMessageStructure, .invalidTTL, .allTokensInvalid, .tooManyTokens: 400
        case .oauthAuthenticationError, .oauthTokenExpired: 401
        case .noPermission: 403
        case .bodyTooLarge: 413
        case .internalError: 500
        }
    }

    /// The `msg` Push Kit sends with this code when nothing more specific applies.
    public var defaultMessage: String {
        switch self {
        case .success: "Success"
        case .partialSuccess: "Some tokens are invalid"
        case .invalidParameters: "Request parameters are incorrect"
        case .badMessageStructure: "The message structure is incorrect"
        case .invalidTTL: "The message TTL is invalid"
        case .oauthAuthenticationError: "OAuth authentication error"
        case .oauthTokenExpired: "The OAuth access token has expired"
        case .noPermission: "No permission to send messages to these tokens"
        case .allTokensInvalid: "All tokens are invalid"
        case .bodyTooLarge: "The message body is too large"
        case .tooManyTokens: "The number of tokens is out of range"
        case .internalError: "Internal error"
        }
    }
}

/// A `messages:send` answer: `{"code": "80000000", "msg": "Success", "requestId": "…"}`.
public struct HMSSendAnswer: Sendable, Hashable, Codable {
    /// The result code, as text; `resultCode` reads it.
    public var code: String
    /// Huawei's message; for a partial success (and for 80300007 when it lists them) a JSON
    /// string with the invalid tokens.
    public var msg: String
    public var requestId: String

    public init(code: HMSResultCode, msg: String? = nil, requestId: String) {
        self.code = code.text
        self.msg = msg ?? code.defaultMessage
        self.requestId = requestId
    }

    /// The code, nil when Push Kit sent one this type does not know.
    public var resultCode: HMSResultCode? { HMSResultCode(text: code) }

    /// The tokens `msg` lists as invalid; empty when it lists none.
    public var illegalTokens: [String] {
        guard let tokens = try? JSONDecoder().decode(HMSTokenReport.self, from: Data(msg.utf8)) else { return [] }
        return tokens.illegalTokens
    }
}

/// What a partial success's `msg` holds: how many tokens took the message, how many did not,
/// and which.
@MemberwiseInit
public struct HMSTokenReport: Sendable, Hashable, Codable {
    public var success: Int
    public var failure: Int
    public var illegalTokens: [String]

    enum CodingKeys: String, CodingKey {
        case success, failure
        case illegalTokens = "illegal_tokens"
    }
}
