public import Foundation
import HeraldMacros

// Push Kit's app-level access token: OAuth 2.0 client credentials at Huawei's token endpoint,
// `POST https://oauth-login.cloud.huawei.com/oauth2/v3/token` with the form fields `grant_type`
// (`client_credentials`), `client_id` and `client_secret`, answered with `access_token`,
// `expires_in` (3600) and `token_type` (`Bearer`)
// (https://developer.huawei.com/consumer/en/doc/HMSCore-Guides/android-server-dev-0000001050040110);
// a refusal is `{"error": 1101, "sub_error": 12304, "error_description": "invalid client_secret"}`
// (https://dev.to/flfljh/huawei-account-one-click-login-1ae).

/// A Huawei app's OAuth 2.0 client: what the Push Kit sender gets its access tokens with. Its
/// description never shows the secret.
@MemberwiseInit
public struct HMSAppCredentials: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The app id (AppGallery Connect's; also its OAuth client id): `/v1/{appId}/messages:send`.
    public var appID: String
    /// The OAuth 2.0 client secret.
    public var clientSecret: String
    /// Huawei's token endpoint, or the sandbox's.
    public var tokenURL: String = HMSAppCredentials.huaweiTokenURL

    /// Huawei's token endpoint.
    public static let huaweiTokenURL = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
    /// The `grant_type` of an app-level token request.
    public static let clientCredentialsGrantType = "client_credentials"
    /// The shortest secret taken: AppGallery Connect's are 64 hex digits; a shorter one was cut
    /// when copied.
    public static let minimumSecretLength = 32

    enum CodingKeys: String, CodingKey {
        case appID = "app_id"
        case clientSecret = "client_secret"
        case tokenURL = "token_url"
    }

    public var description: String { "HMSAppCredentials(app_id: \(appID), token_url: \(tokenURL))" }

    /// Refuses credentials that cannot work, with one line naming the field.
    public func check() throws(HMSCredentialsError) {
        guard !appID.isEmpty, appID.utf8.allSatisfy({ $0 < 0x80 && $0 != UInt8(ascii: "/") && $0 > 0x20 }) else {
            throw HMSCredentialsError("app_id must be the app's id from AppGallery Connect (no spaces or slashes)")
        }
        guard clientSecret.count >= Self.minimumSecretLength else {
            throw HMSCredentialsError(
                "client_secret is \(clientSecret.count) characters; Huawei's are \(Self.minimumSecretLength) or more"
            )
        }
        guard let url = URL(string: tokenURL), url.scheme == "https", url.host?.isEmpty == false else {
            throw HMSCredentialsError("token_url must be an https URL (\(tokenURL))")
        }
    }
}

/// Credentials that cannot work, in one line.
public struct HMSCredentialsError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String

    init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}

/// The token endpoint's answer, granted or refused: `access_token`, `expires_in`, `token_type`
/// on 200; `error`, `sub_error`, `error_description` on a refusal. Its JSON keys are the
/// properties' names in snake case: read and write it with `decode(_:)` and `encoded()`.
@MemberwiseInit
public struct HMSTokenAnswer: Sendable, Hashable, Codable {
    public var accessToken: String? = nil
    /// Seconds the token stays valid (Huawei: 3600).
    public var expiresIn: Int64? = nil
    public var tokenType: String? = nil
    /// Huawei's numeric OAuth error (1101: invalid client).
    public var error: Int? = nil
    public var subError: Int? = nil
    public var errorDescription: String? = nil

    /// A grant.
    public static func granted(_ token: String, expiresIn: Int64) -> Self {
        HMSTokenAnswer(accessToken: token, expiresIn: expiresIn, tokenType: "Bearer")
    }

    /// Huawei's refusal of a client: `error` 1101 with `sub_error` and the reason.
    public static func refused(subError: Int, _ description: String) -> Self {
        HMSTokenAnswer(error: 1101, subError: subError, errorDescription: description)
    }

    /// Reads an answer (its keys in snake case, as Huawei writes them).
    public static func decode(_ data: Data) throws -> HMSTokenAnswer {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(HMSTokenAnswer.self, from: data)
    }

    /// The answer as Huawei writes it: keys in snake case, sorted; absent fields left out.
    public func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)) ?? Data("{}".utf8)
    }
}
