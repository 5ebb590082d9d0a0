/// Why Herald cannot start as configured: a bad setting, an unreadable key, a store that cannot
/// open. The message names the setting or file at fault, never a secret.
public struct HeraldServerError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case configuration
        case credentials
        case startup
    }

    private let code: Code
    /// What is wrong, for the operator.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// A setting is missing, unknown, or out of range.
    public static func configuration(_ message: String) -> Self { Self(.configuration, message) }
    /// A key, secret or service account cannot be read or made.
    public static func credentials(_ message: String) -> Self { Self(.credentials, message) }
    /// A part cannot start (the store, a listener).
    public static func startup(_ message: String) -> Self { Self(.startup, message) }

    /// Whether two errors are of the same kind (the message aside).
    public func isSameKind(as other: Self) -> Bool { code == other.code }
}
