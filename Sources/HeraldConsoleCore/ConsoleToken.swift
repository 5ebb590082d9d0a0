public import Crypto
import Foundation
import HeraldEncoding

/// A console session's secret, as the browser holds it in its cookie, and what the console
/// derives from it: the id the store keeps (a digest, so a stolen database holds no session) and
/// the CSRF token its forms carry (so a form needs no stored token and differs per session).
public struct ConsoleToken: Sendable, Hashable {
    /// 32 random bytes.
    public let secret: [UInt8]

    /// A new random secret (the system's cryptographic generator).
    public static func random() -> ConsoleToken {
        var generator = SystemRandomNumberGenerator()
        return ConsoleToken(secret: (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The token a cookie's value spells; nil for anything `cookieValue` did not make.
    public init?(cookieValue: String) {
        guard cookieValue.utf8.count == 43, let bytes = Base64URL.decode(Substring(cookieValue)), bytes.count == 32
        else { return nil }
        secret = bytes
    }

    private init(secret: [UInt8]) {
        self.secret = secret
    }

    /// The cookie's value: the secret in base64url (43 characters).
    public var cookieValue: String { Base64URL.encode(secret) }

    /// The id the store keeps the session under: SHA-256 of the secret, in hex.
    public var sessionID: String {
        SHA256.hash(data: secret).map { String(format: "%02x", $0) }.joined()
    }

    /// The token a form posted under this session (or this sign-in cookie) carries for
    /// `purpose`: HMAC-SHA256 of the purpose keyed by the secret, in base64url. A page of another
    /// site can neither read it nor compute it.
    public func formToken(_ purpose: FormPurpose) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array(purpose.rawValue.utf8), using: SymmetricKey(data: secret))
        return Base64URL.encode(Array(mac))
    }

    /// Whether `token` is this secret's token for `purpose`, compared in constant time.
    public func accepts(_ token: String?, for purpose: FormPurpose) -> Bool {
        guard let token, let given = Base64URL.decode(Substring(token)) else { return false }
        let key = SymmetricKey(data: secret)
        return HMAC<SHA256>.isValidAuthenticationCode(given, authenticating: Array(purpose.rawValue.utf8), using: key)
    }

    /// What a form token is for: one secret signs both, and a token for one is refused for the
    /// other.
    public enum FormPurpose: String, Sendable {
        /// The sign-in form, keyed by the sign-in cookie (there is no session yet).
        case signIn = "herald console sign-in"
        /// Every form of a signed-in session (actions, sign-out).
        case session = "herald console session"
    }
}
