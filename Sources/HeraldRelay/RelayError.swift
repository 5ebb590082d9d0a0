import HeraldDomain

/// Why the relay refused a request. Knows no transport: HeraldRelayHTTP makes it Hummingbird's
/// `HTTPResponseError`, each kind's status and JSON answer.
public struct RelayError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Hashable, Sendable {
        case invalidField = "invalid_field"
        case unauthorized
        case forbidden
        case notFound = "not_found"
        case conflict
        case unavailable
        case noDevices = "no_devices"
        case tooManyRequests = "too_many_requests"
    }

    /// The kind and the words; equality and hashing look at the kind only (the field, the user
    /// and the retry time are details of one refusal).
    private let kind: ErrorKind<Code>
    private var code: Code { kind.code }
    /// What went wrong, for the caller. Never holds secrets or message text.
    public var detail: String { kind.text }
    /// The request field at fault, for `invalidField`.
    public let field: String?
    /// The user a refused message was for, for `noDevices`.
    public let user: String?
    /// When the same request may succeed again, for `tooManyRequests`.
    public let retryAfter: Duration?

    private init(
        _ code: Code,
        _ detail: String,
        field: String? = nil,
        retryAfter: Duration? = nil,
        user: String? = nil
    ) {
        self.kind = ErrorKind(code, detail)
        self.field = field
        self.user = user
        self.retryAfter = retryAfter
    }

    public var description: String { detail }

    /// A stable name for the kind of failure (`"invalid_field"`), for JSON error bodies.
    public var identifier: String { code.rawValue }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.kind == rhs.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// A request field is missing or malformed.
    public static func invalidField(_ field: String, _ reason: String) -> Self {
        Self(.invalidField, "'\(field)' \(reason)", field: field)
    }
    /// No credential, or one that is not valid.
    public static let unauthorized = Self(.unauthorized, "a valid credential is required")
    /// A valid credential that does not grant this request.
    public static let forbidden = Self(.forbidden, "the credential does not grant this request")
    /// The thing asked for does not exist.
    public static let notFound = Self(.notFound, "not found")
    /// The request conflicts with the relay's state.
    public static let conflict = Self(.conflict, "the request conflicts with the relay's state")
    /// The store cannot be reached; nothing was accepted.
    public static let unavailable = Self(.unavailable, "the relay cannot store the request right now")

    /// A quota is spent: nothing was accepted, and the same request may succeed after `retryAfter`.
    public static func tooManyRequests(_ detail: String, retryAfter: Duration) -> Self {
        Self(.tooManyRequests, detail, retryAfter: retryAfter)
    }

    /// A message for a user without an activated device, refused by the policy: nothing was
    /// written and its idempotency key stays unused, so the sender may send it again once the
    /// user's phone activated.
    public static func noDevices(user: String) -> Self {
        Self(
            .noDevices,
            "user '\(user)' has no activated device; send again once the user's app has activated",
            user: user
        )
    }

    /// The same kind of failure with a more precise message.
    public func with(detail: String) -> Self {
        Self(code, detail, field: field, retryAfter: retryAfter, user: user)
    }

    /// Whether this is a `tooManyRequests` error.
    public var isTooManyRequests: Bool { code == .tooManyRequests }

    /// Whether this is an `invalidField` error (`==` cannot say: that one is made with arguments).
    public var isInvalidField: Bool { code == .invalidField }

    /// Whether this is a `noDevices` refusal.
    public var isNoDevices: Bool { code == .noDevices }
}
