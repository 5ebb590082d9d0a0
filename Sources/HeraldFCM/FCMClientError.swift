import HeraldClientSupport

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

    /// The error for a request that got no answer: `unreachable` when no connection could be
    /// made, else `otherwise`.
    static func classify(_ error: PushTransportError, otherwise: (String) -> Self) -> Self {
        error.isUnreachable ? .unreachable(error.detail) : otherwise(error.detail)
    }
    static func tokenRefused(_ detail: String) -> Self {
        Self(code: .tokenRefused, message: "the token endpoint refused the service account: \(detail)")
    }
    static func tokenEndpoint(_ detail: String) -> Self {
        Self(code: .tokenEndpoint, message: "no access token: \(detail)")
    }
}
