import AsyncHTTPClient
import Foundation
import HeraldClientSupport
import HeraldDomain
import HeraldFCMCore
import Logging
import NIOCore

/// How the FCM sender gets an OAuth2 access token: a signed assertion exchanged at the service
/// account's token endpoint. `AccessTokenCache` keeps the token it grants and asks again.
struct FCMAccessTokens: Sendable {
    let signer: FCMAssertionSigner
    let http: HTTPClient
    let timeout: Duration
    /// What the assertion's `iat` says.
    let clock: any HeraldClock
    let logger: Logger

    /// Asks the token endpoint for a new access token.
    func grant() async throws -> AccessTokenCache.Grant {
        let assertion = try signer.assertion(issuedAt: clock.seconds())
        var request = HTTPClientRequest(url: signer.account.tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        let form = FormEncoding.body(["grant_type": FCMServiceAccount.jwtBearerGrantType, "assertion": assertion])
        request.body = .bytes(ByteBuffer(string: form))
        let response: HTTPAnswer
        do {
            response = try await http.answer(to: request, timeout: timeout, limit: 64 * 1024)
        } catch {
            throw FCMClientError.classify(error, otherwise: FCMClientError.tokenEndpoint)
        }
        guard response.status == 200 else {
            let refusal = try? JSONDecoder().decode(FCMOAuthErrorBody.self, from: response.body)
            let detail = refusal.map { "\($0.error): \($0.errorDescription ?? "")" } ?? "HTTP \(response.status)"
            // 4xx is the account or the clock; 5xx and the rest may pass.
            if (400..<500).contains(response.status) { throw FCMClientError.tokenRefused(detail) }
            throw FCMClientError.tokenEndpoint(detail)
        }
        guard let answer = try? JSONDecoder().decode(FCMAccessTokenResponse.self, from: response.body),
            !answer.accessToken.isEmpty, answer.expiresIn > 0
        else { throw FCMClientError.tokenEndpoint("the token endpoint's answer has no access token") }
        logger.debug("FCM access token refreshed", metadata: ["expires_in": "\(answer.expiresIn)"])
        return AccessTokenCache.Grant(token: answer.accessToken, lifetime: .seconds(answer.expiresIn))
    }
}
