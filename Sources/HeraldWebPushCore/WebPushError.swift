/// Why a Web Push value could not be made, read or trusted: a subscription field, a VAPID key
/// or token, a request header, or an `aes128gcm` body.
///
/// `field` names what was wrong in the terms of the API that carried it
/// (`subscription.endpoint`, `subscription.keys.p256dh`, `authorization`, `ttl` …), so an HTTP
/// layer answers a 400 naming it without parsing `description`.
public struct WebPushError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable {
        case invalidField
        case encryption
        case decryption
        case vapidKey
        case vapidToken
        case vapidKeyMismatch
    }

    private let code: Code
    /// What was wrong: a request or subscription field, `payload`, `body`, `vapid_key`,
    /// `subject` or `authorization`.
    public let field: String
    /// What was wrong with it, in words; never a key or message content.
    public let message: String

    public var description: String { "\(field): \(message)" }

    /// Whether a VAPID token was refused because its key is not the subscription's application
    /// server key (a push service's 403, where every other VAPID refusal is a 401).
    public var isKeyMismatch: Bool { code == .vapidKeyMismatch }

    /// Whether the error is about a VAPID `Authorization` header (a push service's 401 or 403).
    public var isAuthorization: Bool { code == .vapidToken || code == .vapidKeyMismatch }

    static func invalid(_ field: String, _ message: String) -> Self {
        Self(code: .invalidField, field: field, message: message)
    }

    static func encryption(_ message: String) -> Self { Self(code: .encryption, field: "payload", message: message) }
    static func decryption(_ message: String) -> Self { Self(code: .decryption, field: "body", message: message) }
    static func vapidKey(_ message: String) -> Self { Self(code: .vapidKey, field: "vapid_key", message: message) }
    static func vapidToken(_ message: String) -> Self {
        Self(code: .vapidToken, field: "authorization", message: message)
    }
    static let keyMismatch = Self(
        code: .vapidKeyMismatch,
        field: "authorization",
        message: "the VAPID key is not the subscription's application server key"
    )
}
