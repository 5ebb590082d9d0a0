import Crypto
import Foundation
import HeraldEncoding
import Synchronization

/// Signs the VAPID tokens (RFC 8292) of one application server key: an ES256 JWT per push
/// service origin, reused until an hour before it expires, so a busy sender signs once per
/// service in eleven hours rather than once per push.
public final class VAPIDSigner: Sendable {
    /// How long a token is valid: 12 hours (push services take at most 24).
    public static let lifetime: Int64 = 12 * 3600
    /// A token is replaced this long before its `exp`, so none expires in flight.
    public static let renewal: Int64 = 3600

    public let key: VAPIDKey
    /// `sub`: the application server's contact.
    public let subject: String
    private let tokens = Mutex<[String: (text: String, exp: Int64)]>([:])

    /// A signer for `key`, naming `subject` (a `mailto:` or `https:` URI) in every token.
    public init(key: VAPIDKey, subject: String) throws(WebPushError) {
        guard WebPushOrigin.isSubject(subject) else {
            throw .invalid("subject", "the VAPID subject must be a mailto: or https: URI")
        }
        self.key = key
        self.subject = subject
    }

    /// The `Authorization` header value for a push to `endpoint` at `now` (seconds since the
    /// epoch): `vapid t=<JWT>, k=<applicationServerKey>`. Throws (`subscription.endpoint`)
    /// when the endpoint has no origin.
    public func authorization(for endpoint: String, now: Int64) throws(WebPushError) -> String {
        guard let audience = WebPushOrigin.of(endpoint) else {
            throw .invalid("subscription.endpoint", "not an absolute URL")
        }
        let token = try tokens.withLock { (tokens) throws(WebPushError) -> String in
            if let cached = tokens[audience], now < cached.exp - Self.renewal { return cached.text }
            let exp = now + Self.lifetime
            let text = try sign(audience: audience, exp: exp)
            tokens[audience] = (text, exp)
            return text
        }
        return "vapid t=\(token), k=\(key.applicationServerKey)"
    }

    /// A fresh token for `audience` expiring at `exp`.
    private func sign(audience: String, exp: Int64) throws(WebPushError) -> String {
        let claims = JWTClaims(aud: audience, exp: exp, sub: subject)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let claimBytes = try? encoder.encode(claims) else { throw .vapidKey("the claims cannot be encoded") }
        do {
            return try CompactJWS.sign(
                header: Array(#"{"typ":"JWT","alg":"ES256"}"#.utf8),
                claims: Array(claimBytes)
            ) { try Array(key.signingKey.signature(for: $0).rawRepresentation) }
        } catch {
            throw .vapidKey("signing failed")
        }
    }
}

/// A VAPID JWT's claims as JSON.
struct JWTClaims: Codable {
    var aud: String
    var exp: Int64
    var sub: String
}
