public import Crypto
import Foundation
import HeraldEncoding

/// An APNs provider authentication token: an ES256-signed JWT with `kid`, `iss` and `iat`.
public struct ProviderToken: Sendable, Hashable, CustomStringConvertible {
    /// The 10-character key id (`kid`) of the signing key.
    public let keyID: String
    /// The 10-character team id (`iss`).
    public let teamID: String
    /// When the token was signed (`iat`), in seconds since the Unix epoch.
    public let issuedAt: Int64
    /// The compact JWT, as sent in `authorization: bearer <token>`.
    public let text: String

    /// Shows whose token it is, never the token itself (it authenticates as the team).
    public var description: String { "ProviderToken(kid: \(keyID), iss: \(teamID), iat: \(issuedAt))" }

    init(keyID: String, teamID: String, issuedAt: Int64, text: String) {
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
        self.text = text
    }
}

/// Signs provider tokens with a team's ES256 key (Apple's `AuthKey_<KEYID>.p8`).
public struct ProviderTokenSigner: Sendable {
    public let keyID: String
    public let teamID: String
    private let key: P256.Signing.PrivateKey

    /// A signer for the PKCS#8 PEM text of a `.p8` key.
    public init(privateKeyPEM: String, keyID: String, teamID: String) throws {
        key = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        self.keyID = keyID
        self.teamID = teamID
    }

    /// A signer for an in-memory key.
    public init(privateKey: P256.Signing.PrivateKey, keyID: String, teamID: String) {
        key = privateKey
        self.keyID = keyID
        self.teamID = teamID
    }

    /// Signs a token issued at `issuedAt` (seconds since the Unix epoch).
    /// A token this signer made earlier (kept across a restart); nil if `text` is not one: not a
    /// provider token, another key or team, or a signature that does not verify.
    public func restore(_ text: String) -> ProviderToken? {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let parsed = ParsedProviderToken(Substring(text)), parsed.keyID == keyID, parsed.teamID == teamID,
            parsed.isSigned(by: key.publicKey)
        else { return nil }
        return ProviderToken(keyID: keyID, teamID: teamID, issuedAt: parsed.issuedAt, text: text)
    }

    public func makeToken(issuedAt: Int64) throws -> ProviderToken {
        let text = try CompactJWS.sign(
            header: Array(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8),
            claims: Array(#"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#.utf8)
        ) { try Array(key.signature(for: $0).rawRepresentation) }
        return ProviderToken(keyID: keyID, teamID: teamID, issuedAt: issuedAt, text: text)
    }
}

/// A provider token taken apart, before its signature is checked.
public struct ParsedProviderToken: Sendable {
    public let keyID: String
    public let teamID: String
    public let issuedAt: Int64
    let signingInput: [UInt8]
    let signature: [UInt8]

    /// Parses a compact JWS; nil unless it has an ES256 header with `kid`, and `iss` and `iat` claims.
    public init?(_ text: Substring) {
        guard let jws = CompactJWS(text), jws.signature.count == 64,
            let header = try? JSONSerialization.jsonObject(with: Data(jws.header)) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: Data(jws.claims)) as? [String: Any],
            header["alg"] as? String == "ES256",
            let keyID = header["kid"] as? String,
            let teamID = claims["iss"] as? String,
            let issuedAt = (claims["iat"] as? NSNumber)?.int64Value
        else { return nil }
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
        signingInput = jws.signingInput
        signature = jws.signature
    }

    /// Whether the signature verifies with `publicKey`.
    public func isSigned(by publicKey: P256.Signing.PublicKey) -> Bool {
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
        return publicKey.isValidSignature(signature, for: signingInput)
    }
}
