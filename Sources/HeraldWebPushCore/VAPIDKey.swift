public import Crypto
import Foundation
import HeraldEncoding

/// An application server's VAPID key (RFC 8292): an ES256 (P-256) key pair whose public half
/// the browser was given as `applicationServerKey` when it subscribed, and whose private half
/// signs the sender's tokens.
public struct VAPIDKey: Sendable {
    /// The private key, for signing.
    public let signingKey: P256.Signing.PrivateKey

    /// The key of a PEM text: PKCS#8 (`PRIVATE KEY`, as `pem` writes) or SEC1
    /// (`EC PRIVATE KEY`, as `openssl ecparam -genkey` and the `web-push` tools write).
    public init(pem: String) throws(WebPushError) {
        do {
            signingKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw .vapidKey("not a P-256 private key in PEM form (PKCS#8 or SEC1)")
        }
    }

    /// The key of an in-memory private key.
    public init(signingKey: P256.Signing.PrivateKey) {
        self.signingKey = signingKey
    }

    /// A new random key.
    public static func generate() -> VAPIDKey {
        VAPIDKey(signingKey: P256.Signing.PrivateKey())
    }

    /// The private key as PKCS#8 PEM text.
    public var pem: String { signingKey.pemRepresentation }

    /// The public key, uncompressed (65 bytes, 0x04 first): what `k` carries.
    public var publicKey: [UInt8] { Array(signingKey.publicKey.x963Representation) }

    /// The public key as base64url without padding: the `applicationServerKey` a web app passes
    /// to `PushManager.subscribe`.
    public var applicationServerKey: String { Base64URL.encode(publicKey) }
}

/// The claims of a VAPID token a push service accepted.
public struct VAPIDClaims: Sendable, Hashable {
    /// `aud`: the push service's origin.
    public var aud: String
    /// `exp`: when the token expires, in seconds since the epoch.
    public var exp: Int64
    /// `sub`: the application server's contact, a `mailto:` or `https:` URI.
    public var sub: String
    /// `k`: the public key that verified the signature (65 bytes, uncompressed).
    public var key: [UInt8]
    /// `t`: the JWT itself, as verified (a push service's log may keep it; it names no content).
    public var token: String

    public init(aud: String, exp: Int64, sub: String, key: [UInt8] = [], token: String = "") {
        self.token = token
        self.aud = aud
        self.exp = exp
        self.sub = sub
        self.key = key
    }
}

/// The origin (RFC 6454) of a URL: `scheme://host[:port]`, lowercase, the default port left
/// out: a VAPID token's `aud`.
public enum WebPushOrigin {
    /// The origin of `url`; nil unless it is an absolute URL with a scheme and a host.
    public static func of(_ url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let defaultPort = scheme == "https" ? 443 : scheme == "http" ? 80 : nil
        guard let port = components.port, port != defaultPort else { return "\(scheme)://\(bracketed)" }
        return "\(scheme)://\(bracketed):\(port)"
    }

    /// Whether `subject` is a VAPID `sub`: a `mailto:` or an `https:` URI (RFC 8292 §2.1).
    static func isSubject(_ subject: String) -> Bool {
        let lower = subject.lowercased()
        if lower.hasPrefix("mailto:") { return subject.count > "mailto:".count }
        if lower.hasPrefix("https:") { return of(subject) != nil }
        return false
    }
}
