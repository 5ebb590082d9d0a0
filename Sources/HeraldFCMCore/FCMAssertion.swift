public import CryptoExtras
import Foundation
import HeraldEncoding
import HeraldMacros

/// Signs the OAuth2 JWT-bearer assertions a service account exchanges for access tokens
/// (RS256, `kid` = the key id; `iss` = the account, `scope`, `aud` = the token URI, `iat`, `exp`).
public struct FCMAssertionSigner: Sendable {
    public let account: FCMServiceAccount
    private let key: _RSA.Signing.PrivateKey

    /// Google accepts assertions valid for at most an hour.
    public static let lifetime: Int64 = 3600

    public init(account: FCMServiceAccount) throws {
        self.account = account
        key = try account.signingKey()
    }

    /// An assertion issued at `issuedAt` (seconds since the epoch) for `scope`.
    public func assertion(issuedAt: Int64, scope: String = FCMServiceAccount.messagingScope) throws -> String {
        let header: [String: String] = ["alg": "RS256", "typ": "JWT", "kid": account.privateKeyID]
        let claims = Claims(
            iss: account.clientEmail,
            scope: scope,
            aud: account.tokenURI,
            iat: issuedAt,
            exp: issuedAt + Self.lifetime
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try CompactJWS.sign(
            header: Array(try encoder.encode(header)),
            claims: Array(try encoder.encode(claims))
        ) { input throws(FCMCoreError) in
            do {
                return Array(try key.signature(for: input, padding: .insecurePKCS1v1_5).rawRepresentation)
            } catch {
                throw FCMCoreError.signing("RS256 signing failed")
            }
        }
    }

    struct Claims: Codable {
        var iss: String
        var scope: String
        var aud: String
        var iat: Int64
        var exp: Int64
    }
}

/// An assertion taken apart, before its signature is checked: what a token endpoint reads.
public struct FCMAssertion: Sendable, Hashable {
    public let keyID: String
    public let issuer: String
    public let scope: String
    public let audience: String
    public let issuedAt: Int64
    public let expiresAt: Int64
    let signingInput: [UInt8]
    let signature: [UInt8]

    /// Parses a compact JWS; nil unless it has an RS256 header with `kid` and the five claims.
    public init?(_ text: String) {
        guard let jws = CompactJWS(text),
            let header = try? JSONSerialization.jsonObject(with: Data(jws.header)) as? [String: Any],
            header["alg"] as? String == "RS256",
            let keyID = header["kid"] as? String,
            let claims = try? JSONDecoder().decode(FCMAssertionSigner.Claims.self, from: Data(jws.claims))
        else { return nil }
        self.keyID = keyID
        issuer = claims.iss
        scope = claims.scope
        audience = claims.aud
        issuedAt = claims.iat
        expiresAt = claims.exp
        signingInput = jws.signingInput
        signature = jws.signature
    }

    /// Whether the RS256 signature verifies with `publicKey`.
    public func isSigned(by publicKey: _RSA.Signing.PublicKey) -> Bool {
        publicKey.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature),
            for: signingInput,
            padding: .insecurePKCS1v1_5
        )
    }
}

/// The token endpoint's answer to a valid assertion.
@MemberwiseInit
public struct FCMAccessTokenResponse: Sendable, Hashable, Codable {
    public var accessToken: String
    /// Seconds the token stays valid (Google: 3599).
    public var expiresIn: Int64
    public var tokenType: String = "Bearer"

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case expiresIn = "expires_in"
        case tokenType = "token_type"
    }
}

/// The token endpoint's refusal (RFC 6749 §5.2): `{"error": "invalid_grant", "error_description": …}`.
@MemberwiseInit
public struct FCMOAuthErrorBody: Sendable, Hashable, Codable {
    public var error: String
    public var errorDescription: String?

    enum CodingKeys: String, CodingKey {
        case error
        case errorDescription = "error_description"
    }
}
