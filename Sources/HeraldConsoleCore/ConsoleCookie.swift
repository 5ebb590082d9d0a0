/// The console's cookies as `set-cookie` values: scoped to `/console`, `HttpOnly` (no script
/// reads them), `SameSite=Strict` (no other site's page sends them), `Secure` whenever the
/// console is reached over TLS.
public struct ConsoleCookie: Sendable, Hashable {
    /// The session's cookie.
    public static let session = "herald_console"
    /// The sign-in form's cookie: keys the sign-in form's CSRF token before there is a session.
    public static let signIn = "herald_console_sign_in"

    public var name: String
    public var value: String
    /// Seconds until the browser drops it; 0 deletes it now.
    public var maxAge: Int64
    public var secure: Bool

    public init(name: String, value: String, maxAge: Int64, secure: Bool) {
        self.name = name
        self.value = value
        self.maxAge = maxAge
        self.secure = secure
    }

    /// A cookie that deletes `name` (logout, an expired session).
    public static func deleting(_ name: String, secure: Bool) -> ConsoleCookie {
        ConsoleCookie(name: name, value: "", maxAge: 0, secure: secure)
    }

    /// The `set-cookie` header's value.
    public var header: String {
        var text = "\(name)=\(value); Path=/console; Max-Age=\(maxAge); HttpOnly; SameSite=Strict"
        if secure { text += "; Secure" }
        return text
    }
}
