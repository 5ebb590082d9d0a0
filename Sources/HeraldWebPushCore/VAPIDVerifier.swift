import Crypto
import Foundation
import HeraldEncoding

/// What a push service checks of a VAPID `Authorization` header (RFC 8292 §3 and §4.2).
public enum VAPIDVerifier {
    /// The furthest a token's `exp` may lie ahead (RFC 8292 §2: no more than 24 hours).
    public static let maximumLifetime: Int64 = 24 * 3600

    /// The claims of `authorization` (`vapid t=<JWT>, k=<key>`) for a push to `endpointOrigin`
    /// at `now` (seconds since the epoch), when every check passes: the `vapid` scheme, `t` and
    /// `k` present, `k` a P-256 point, an ES256 JWT whose signature verifies with `k`, `aud`
    /// equal to the origin, `exp` in the future and at most 24 hours ahead, `sub` a `mailto:`
    /// or `https:` URI, and `k` equal to `expectedKey` when one is given (the subscription's
    /// application server key; a mismatch is `isKeyMismatch`).
    public static func verify(
        authorization: String,
        endpointOrigin: String,
        now: Int64,
        expectedKey: [UInt8]?
    ) throws(WebPushError) -> VAPIDClaims {
        let (token, keyText) = try parameters(of: authorization)
        guard let key = Base64URL.decode(Substring(keyText.trimmingPadding())), key.count == 65, key.first == 4,
            let publicKey = try? P256.Signing.PublicKey(x963Representation: key)
        else { throw .vapidToken("k is not an uncompressed P-256 public key in base64url") }
        guard let jws = CompactJWS(token) else { throw .vapidToken("t is not a compact JWS") }
        guard let header = try? JSONSerialization.jsonObject(with: Data(jws.header)) as? [String: Any],
            header["alg"] as? String == "ES256"
        else { throw .vapidToken("the JWT's header is not ES256") }
        guard jws.signature.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: jws.signature),
            publicKey.isValidSignature(signature, for: jws.signingInput)
        else { throw .vapidToken("the JWT's signature does not verify with k") }
        guard let claims = try? JSONDecoder().decode(JWTClaims.self, from: Data(jws.claims)) else {
            throw .vapidToken("the JWT's claims need aud, exp and sub")
        }
        guard claims.aud == endpointOrigin else {
            throw .vapidToken("aud \(claims.aud) is not the push service's origin \(endpointOrigin)")
        }
        guard claims.exp > now else { throw .vapidToken("the JWT expired") }
        guard claims.exp <= now + maximumLifetime else { throw .vapidToken("exp is more than 24 hours ahead") }
        guard WebPushOrigin.isSubject(claims.sub) else { throw .vapidToken("sub is not a mailto: or https: URI") }
        if let expectedKey, expectedKey != key { throw .keyMismatch }
        return VAPIDClaims(aud: claims.aud, exp: claims.exp, sub: claims.sub, key: key, token: token)
    }

    /// `t` and `k` of `vapid t=…, k=…` (RFC 8292 §3: comma-separated auth-params, any order).
    static func parameters(of authorization: String) throws(WebPushError) -> (token: String, key: String) {
        let trimmed = authorization.trimmingCharacters(in: .whitespaces)
        guard let space = trimmed.firstIndex(of: " "), trimmed[..<space].lowercased() == "vapid" else {
            throw .vapidToken("the scheme is not vapid")
        }
        var token: String?
        var key: String?
        for parameter in trimmed[space...].split(separator: ",") {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            let value = pair[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(["\""]))
            switch pair[0].trimmingCharacters(in: .whitespaces).lowercased() {
            case "t": token = value
            case "k": key = value
            default: break
            }
        }
        guard let token, !token.isEmpty else { throw .vapidToken("t is missing") }
        guard let key, !key.isEmpty else { throw .vapidToken("k is missing") }
        return (token, key)
    }
}

extension String {
    /// The text without trailing `=`: base64url written with padding, read as without.
    func trimmingPadding() -> String {
        var text = Substring(self)
        while text.hasSuffix("=") { text = text.dropLast() }
        return String(text)
    }
}
