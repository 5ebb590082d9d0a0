public import HeraldConsoleCore
public import HeraldStore

/// The console's settings (`console:` in the configuration file), resolved once at start.
public struct ConsoleConfiguration: Sendable {
    /// How long a session lasts after sign-in, whatever is done with it; then the operator signs
    /// in again.
    public var sessionLifetime: Duration = .seconds(8 * 3600)
    /// Marks the cookies `Secure` even on a request that did not say it came over TLS (the
    /// console behind a proxy that terminates TLS and does not send `x-forwarded-proto`). A
    /// request with `x-forwarded-proto: https` gets them `Secure` anyway.
    public var secureCookies = false
    /// Operators from the configuration file, besides those made with `herald operators add`;
    /// a name in both signs in with this one.
    public var operators: [OperatorRecord] = []
    /// Failed sign-ins allowed before the console stops checking passwords for a while.
    public var signInLimits = SignInThrottle.Limits()
    /// How often the live stream reads the store while a console watches it.
    public var livePollInterval: Duration = .seconds(1)
    /// The largest form body read, in bytes.
    public var maximumFormBytes = 16 * 1024
    /// What plays simulations; nil: the simulations page says none are available here.
    public var simulator: (any ConsoleSimulator)?
    /// What the sandbox's push networks received for a push, in sandbox mode; nil otherwise.
    public var sandbox: (any ConsoleSandboxRecords)?

    public init() {}
}

/// What the in-process sandbox's push networks received for a push, for the push's page in
/// sandbox mode: the request's headers and sizes, never the body.
public protocol ConsoleSandboxRecords: Sendable {
    /// The requests the sandbox received for `pushID` (matched by the relay's push id, or the
    /// `apns-id` it was sent with), oldest first.
    func received(pushID: String, apnsID: String?) async -> [SandboxReceipt]
}

/// One request a sandboxed push network received, as the console shows it.
public struct SandboxReceipt: Sendable, Hashable {
    /// Milliseconds since the epoch.
    public var at: Int64
    /// `APNs`, `FCM`, `Web Push`, `Push Kit`.
    public var network: String
    /// The status the sandbox answered, and its reason if any.
    public var status: Int
    public var reason: String?
    /// Headers and sizes that carry no content (`apns-push-type alert`, `body 1,204 bytes`).
    public var facts: [String]
    /// What the emulated device did with it, in words without content (`shown`, `opened`), when
    /// the sandbox knows.
    public var device: String?

    public init(at: Int64, network: String, status: Int, reason: String?, facts: [String], device: String? = nil) {
        self.at = at
        self.network = network
        self.status = status
        self.reason = reason
        self.facts = facts
        self.device = device
    }
}
