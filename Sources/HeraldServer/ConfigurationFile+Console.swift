extension ConfigurationFile {
    /// `console:`: the operator console at `/console` (docs/console.md).
    public struct Console: Codable, Sendable, Equatable {
        public init() {}

        /// Whether `/console` is served: on by default in sandbox mode (`herald serve` without an
        /// Apple key), off otherwise.
        public var enabled: Bool?
        /// Seconds a session lasts after sign-in (28800: 8 h; 300 to 604800).
        public var sessionLifetime: Int?
        /// Marks the cookies `Secure` on every request (behind a TLS proxy that sends no
        /// `x-forwarded-proto`).
        public var secureCookies: Bool?
        /// Operators besides those of `herald operators add`: name, role and an Argon2id hash
        /// (`herald operators hash`).
        public var operators: [Operator]?

        /// One configured operator.
        public struct Operator: Codable, Sendable, Equatable {
            public var name: String
            /// `viewer` or `operator`.
            public var role: String
            /// `$argon2id$…`, as `herald operators hash` prints it.
            public var passwordHash: String

            enum CodingKeys: String, CodingKey {
                case name, role
                case passwordHash = "password_hash"
            }
        }

        enum CodingKeys: String, CodingKey {
            case enabled
            case sessionLifetime = "session_lifetime"
            case secureCookies = "secure_cookies"
            case operators
        }
    }
}
