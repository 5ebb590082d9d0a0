/// Why the sender could not get an answer from FCM or its token endpoint.
public struct FCMClientError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable {
        case transport
        case unreachable
        case tokenRefused
        case tokenEndpoint
    }

    private let code: Code
    public let message: String

    public var description: String { message }

    /// Whether trying again later may help (a refused assertion will be refused again).
    public var isRetryable: Bool { code != .tokenRefused }

    static func transport(_ detail: String) -> Self { Self(code: .transport, message: "FCM unreachable: \(detail)") }
    static func unreachable(_ detail: String) -> Self {
        Self(code: .unreachable, message: "cannot connect to FCM: \(detail)")
    }

    /// Whether no connection could be made at all (refused, timed out, TLS handshake failed):
    /// FCM is unreachable, not this message at fault.
    public var isUnreachable: Bool { code == .unreachable }

    /// The error for `error`, thrown by the HTTP client before any answer: `unreachable` when it
    /// is a failure to connect, else `otherwise`.
    static func classify(_ error: any Error, otherwise: (String) -> Self) -> Self {
        if let error = error as? Self { return error }
        return ConnectFailure.matches(error) ? .unreachable("\(error)") : otherwise("\(error)")
    }
    static func tokenRefused(_ detail: String) -> Self {
        Self(code: .tokenRefused, message: "the token endpoint refused the service account: \(detail)")
    }
    static func tokenEndpoint(_ detail: String) -> Self {
        Self(code: .tokenEndpoint, message: "no access token: \(detail)")
    }
}
