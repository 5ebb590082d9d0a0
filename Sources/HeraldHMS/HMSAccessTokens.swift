import AsyncHTTPClient
import Foundation
import HeraldClientSupport
import HeraldHMSCore
import Logging
import NIOCore

/// How the Push Kit sender gets an app-level access token: OAuth 2.0 client credentials at the
/// app's token URL. `AccessTokenCache` keeps what it grants.
struct HMSAccessTokens: Sendable {
    let credentials: HMSAppCredentials
    let http: HTTPClient
    let timeout: Duration
    let logger: Logger

    func grant() async throws -> AccessTokenCache.Grant {
        var request = HTTPClientRequest(url: credentials.tokenURL)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        // The secret goes in the body only; it is never logged.
        request.body = .bytes(
            ByteBuffer(
                string: FormEncoding.body([
                    "grant_type": HMSAppCredentials.clientCredentialsGrantType,
                    "client_id": credentials.appID,
                    "client_secret": credentials.clientSecret,
                ])
            )
        )
        let reply: HTTPAnswer
        do {
            reply = try await http.answer(to: request, timeout: timeout, limit: 64 * 1024)
        } catch {
            throw HMSTokenFailure(kind: error.isUnreachable ? .unreachable : .passing, detail: error.detail)
        }
        let answer = try? HMSTokenAnswer.decode(reply.body)
        if reply.status == 200, let token = answer?.accessToken, !token.isEmpty, let lifetime = answer?.expiresIn,
            lifetime > 0
        {
            logger.debug("Push Kit access token granted", metadata: ["expires_in": "\(lifetime)"])
            return AccessTokenCache.Grant(token: token, lifetime: .seconds(lifetime))
        }
        let reason = answer?.errorDescription.map { "\(answer?.error ?? 0)/\(answer?.subError ?? 0): \($0)" }
        let detail = "token endpoint answered \(reply.status)" + (reason.map { " (\($0))" } ?? "")
        // 4xx: the client id or secret; 5xx and a 200 without a token may pass.
        throw HMSTokenFailure(kind: (400..<500).contains(reply.status) ? .refused : .passing, detail: detail)
    }
}

/// Why no access token came from Huawei's token endpoint.
struct HMSTokenFailure: Error {
    /// No connection could be made (`unreachable`), it refused the app's client id and secret
    /// (`refused`: asking again will not help), or anything else that may pass (`passing`: a
    /// 5xx, a broken answer).
    enum Kind { case unreachable, refused, passing }

    let kind: Kind
    let detail: String
}
