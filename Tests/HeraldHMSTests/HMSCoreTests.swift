import Foundation
import HeraldClientSupport
import HeraldHMSCore
import Testing

@testable import HeraldHMS

@Suite("Push Kit's facts")
struct HMSCoreTests {
    @Test(
        "every result code: its HTTP status and what it means for a push",
        arguments: [
            (HMSResultCode.success, 200, HMSResultCode.Meaning.delivered),
            (.partialSuccess, 200, .delivered),
            (.invalidParameters, 400, .failed),
            (.badMessageStructure, 400, .failed),
            (.invalidTTL, 400, .failed),
            (.oauthAuthenticationError, 401, .failed),
            (.oauthTokenExpired, 401, .refreshTokenAndRetry),
            (.noPermission, 403, .failed),
            (.allTokensInvalid, 400, .tokenDead),
            (.bodyTooLarge, 413, .failed),
            (.tooManyTokens, 400, .failed),
            (.internalError, 500, .retry),
        ]
    )
    func resultCodes(code: HMSResultCode, status: Int, meaning: HMSResultCode.Meaning) {
        #expect(code.status == status)
        #expect(code.meaning == meaning)
        #expect(!code.defaultMessage.isEmpty)
    }

    @Test("the table covers every code")
    func everyCode() {
        #expect(HMSResultCode.allCases.count == 12)
        #expect(HMSResultCode.allCases.filter(\.isConfiguration) == [.oauthAuthenticationError, .noPermission])
    }

    @Test(
        "how the sender handles an answer: flow control whatever the body, then the code",
        arguments: [
            (200, HMSResultCode.success, [String](), AnswerClassification.delivered),
            (200, .partialSuccess, ["other"], .delivered),
            (200, .partialSuccess, ["mine"], .tokenDead),
            (400, .allTokensInvalid, ["mine"], .tokenDead),
            (401, .oauthTokenExpired, [], .refreshTokenAndRetry),
            (401, .oauthAuthenticationError, [], .configuration),
            (403, .noPermission, [], .configuration),
            (413, .bodyTooLarge, [], .permanent),
            (400, .badMessageStructure, [], .permanent),
            (500, .internalError, [], .retry),
            (503, .success, [], .retry),
            (429, .badMessageStructure, [], .retry),
        ]
    )
    func classification(status: Int, code: HMSResultCode, illegal: [String], expected: AnswerClassification) {
        let report = HMSTokenReport(success: 1, failure: illegal.count, illegalTokens: illegal)
        let msg = illegal.isEmpty ? nil : String(decoding: try! JSONEncoder().encode(report), as: UTF8.self)
        let reply = HMSReply(status: status, answer: HMSSendAnswer(code: code, msg: msg, requestId: "r"))
        #expect(reply.classification(token: "mine") == expected)
    }

    @Test("an answer without a body: 5xx retries, anything else is permanent")
    func noBody() {
        #expect(HMSReply(status: 502, answer: nil).classification(token: "t") == .retry)
        #expect(HMSReply(status: 404, answer: nil).classification(token: "t") == .permanent)
    }

    @Test("the message: data as one JSON string, urgency, ttl, a collapse group, one token, no notification")
    func messageBody() throws {
        let payload = HMSPayload(package: "p", urgency: .high, data: ["b": "2", "a": "1/x"])
        let message = HMSMessage(payload: payload, token: "tok", ttlSeconds: 600, collapseKey: "chat-1", category: "IM")
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(HMSSendRequest(message: message)))
        let object = try #require(json as? [String: Any])
        #expect(object["validate_only"] as? Bool == false)
        let body = try #require(object["message"] as? [String: Any])
        #expect(body["data"] as? String == #"{"a":"1/x","b":"2"}"#)
        #expect(body["token"] as? [String] == ["tok"])
        #expect(body["notification"] == nil)
        let android = try #require(body["android"] as? [String: Any])
        #expect(android["urgency"] as? String == "HIGH")
        #expect(android["ttl"] as? String == "600s")
        #expect(android["category"] as? String == "IM")
        #expect(android["collapse_key"] as? Int == HMSMessage.collapseGroup(for: "chat-1"))
        try message.validate()
    }

    @Test("a send request may leave validate_only out")
    func validateOnlyOptional() throws {
        let request = try JSONDecoder().decode(
            HMSSendRequest.self,
            from: Data(#"{"message":{"data":"{}","token":["t"]}}"#.utf8)
        )
        #expect(request == HMSSendRequest(message: HMSMessage(data: "{}", token: ["t"])))
    }

    @Test("collapse groups are the same in every process and within 0–100")
    func collapseGroups() {
        #expect(HMSMessage.collapseGroup(for: "") == Int(0xcbf2_9ce4_8422_2325 % UInt64(101)))
        #expect(HMSMessage.collapseGroup(for: "chat-1") == HMSMessage.collapseGroup(for: "chat-1"))
        #expect((0..<500).allSatisfy { HMSMessage.collapseGroups.contains(HMSMessage.collapseGroup(for: "k\($0)")) })
    }

    @Test(
        "what Push Kit would refuse, with its code and field",
        arguments: [
            (HMSMessage(data: "{}", token: []), HMSResultCode.tooManyTokens, "message.token"),
            (HMSMessage(data: "{}", token: Array(repeating: "t", count: 1001)), .tooManyTokens, "message.token"),
            (HMSMessage(data: nil, token: ["t"]), .badMessageStructure, "message.data"),
            (HMSMessage(data: String(repeating: "x", count: 4097), token: ["t"]), .bodyTooLarge, "message.data"),
            (HMSMessage(data: "{}", android: .init(ttl: "1296001s"), token: ["t"]), .invalidTTL, "message.android.ttl"),
            (HMSMessage(data: "{}", android: .init(ttl: "ten"), token: ["t"]), .invalidTTL, "message.android.ttl"),
            (
                HMSMessage(data: "{}", android: .init(collapseKey: 101), token: ["t"]), .badMessageStructure,
                "message.android.collapse_key"
            ),
        ]
    )
    func refusals(message: HMSMessage, code: HMSResultCode, field: String) {
        #expect(throws: HMSValidationError(code, field: field)) { try message.validate() }
    }

    @Test("a ttl never exceeds what Push Kit keeps, and is never negative")
    func ttlClamped() {
        let payload = HMSPayload(package: "p", urgency: .normal, data: [:])
        #expect(
            HMSMessage(payload: payload, token: "t", ttlSeconds: 99_999_999, collapseKey: nil).android?.ttl
                == "1296000s"
        )
        #expect(HMSMessage(payload: payload, token: "t", ttlSeconds: -5, collapseKey: nil).android?.ttl == "0s")
    }

    @Test(
        "credentials that cannot work are refused in one line naming the field",
        arguments: [
            ("", String(repeating: "s", count: 64), HMSAppCredentials.huaweiTokenURL, "app_id"),
            ("1 2", String(repeating: "s", count: 64), HMSAppCredentials.huaweiTokenURL, "app_id"),
            ("10", "short", HMSAppCredentials.huaweiTokenURL, "client_secret"),
            ("10", String(repeating: "s", count: 64), "http://oauth.example/token", "token_url"),
            ("10", String(repeating: "s", count: 64), "not a url", "token_url"),
        ]
    )
    func badCredentials(appID: String, secret: String, url: String, field: String) {
        let credentials = HMSAppCredentials(appID: appID, clientSecret: secret, tokenURL: url)
        let error = #expect(throws: HMSCredentialsError.self) { try credentials.check() }
        let message = error?.message ?? ""
        #expect(message.hasPrefix(field))
        #expect(!message.contains("\n"))
        #expect(secret.count < 8 || !message.contains(secret))
    }

    @Test("good credentials pass, and their description never shows the secret")
    func goodCredentials() throws {
        let secret = String(repeating: "ab12", count: 16)
        let credentials = HMSAppCredentials(appID: "104857600", clientSecret: secret)
        try credentials.check()
        #expect(!"\(credentials)".contains(secret))
        #expect(credentials.tokenURL == "https://oauth-login.cloud.huawei.com/oauth2/v3/token")
    }

    @Test("the token endpoint's answers, granted and refused")
    func tokenAnswers() throws {
        let grant = #"{"access_token":"CgB","expires_in":3600,"token_type":"Bearer"}"#
        #expect(try HMSTokenAnswer.decode(Data(grant.utf8)) == .granted("CgB", expiresIn: 3600))
        #expect(String(decoding: HMSTokenAnswer.granted("CgB", expiresIn: 3600).encoded(), as: UTF8.self) == grant)
        let refusal = #"{"error":1101,"error_description":"invalid client_secret","sub_error":12304}"#
        #expect(try HMSTokenAnswer.decode(Data(refusal.utf8)) == .refused(subError: 12304, "invalid client_secret"))
        #expect(
            String(decoding: HMSTokenAnswer.refused(subError: 12304, "invalid client_secret").encoded(), as: UTF8.self)
                == refusal
        )
    }

    @Test(
        "the provider stage's outcome for every result",
        arguments: [
            (HMSResult.delivered(requestID: "r1"), PushOutcome.delivered(receipt: "r1")),
            (.tokenDead(code: .allTokensInvalid), .tokenDead(reason: "80300007: All tokens are invalid", since: nil)),
            (.failed(code: .noPermission, status: 403, message: "no"), .failed(reason: "80300002: no", status: 403)),
            (.failed(code: nil, status: 401, message: "bad secret"), .failed(reason: "bad secret", status: 401)),
            (.retryLater(reason: "503", retryAfter: .seconds(4)), .retryLater(reason: "503", after: .seconds(4))),
            (.unreachable(reason: "down"), .unreachable(reason: "down")),
            (.expired, .expired),
        ]
    )
    func outcomes(result: HMSResult, outcome: PushOutcome) {
        #expect(PushOutcome(result) == outcome)
    }
}
