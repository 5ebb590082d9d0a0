import Dispatch
import HeraldConsoleCore
import HeraldCrypto
import HeraldRelay
import HeraldStore
import Hummingbird
import Logging
import Metrics
import Synchronization

/// An operator signed in, as a request's session cookie proved.
struct SignedIn: Sendable {
    var name: String
    /// The operator's role now (read with the session, so a demotion takes effect at once).
    var role: OperatorRole
    var token: ConsoleToken
    var expiresAt: Int64

    /// The token every form of this session carries.
    var csrf: String { token.formToken(.session) }
    /// Who acted, in the audit log.
    var actor: String { "operator:" + name }
}

/// Sign-in, sessions and sign-out: the operator accounts (configured and stored), the sessions in
/// the store (so every node of a cluster knows them and a sign-out ends them everywhere), the
/// throttle on failed sign-ins.
final class ConsoleSessions: Sendable {
    let store: any HeraldStore
    let configuration: ConsoleConfiguration
    let clock: any HeraldClock
    private let throttle: Mutex<SignInThrottle>
    /// A hash no password matches, checked for an unknown name so that the answer takes as long
    /// as for a known one (the time does not tell which names exist).
    private let decoy: String

    init(store: any HeraldStore, configuration: ConsoleConfiguration, clock: any HeraldClock) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        throttle = Mutex(SignInThrottle(limits: configuration.signInLimits))
        decoy = (try? PasswordHash.hash(ConsoleToken.random().cookieValue)) ?? ""
    }

    /// The operator whose session cookie the request carries, if it is valid now.
    func signedIn(_ request: Request) async throws -> SignedIn? {
        guard let value = request.cookies[ConsoleCookie.session]?.value,
            let token = ConsoleToken(cookieValue: value)
        else { return nil }
        guard let session = try await store.consoleSession(id: token.sessionID), session.expiresAt > clock.now()
        else { return nil }
        guard let account = try await account(named: session.operatorName) else { return nil }
        return SignedIn(name: account.name, role: account.role, token: token, expiresAt: session.expiresAt)
    }

    /// The account of `name`: the configuration's first, then the store's.
    func account(named name: String) async throws -> OperatorRecord? {
        if let configured = configuration.operators.first(where: { $0.name == name }) { return configured }
        return try await store.operatorAccount(name: name)
    }

    /// The outcome of a sign-in.
    enum SignIn {
        case signedIn(ConsoleToken, OperatorRecord)
        case refused
        case throttled(retryAfter: Duration)
    }

    /// Checks `password` for `name` (unless the throttle refuses first) and, when it matches,
    /// stores a new session.
    func signIn(name: String, password: String, address: String) async throws -> SignIn {
        let now = clock.now()
        if case .refused(let wait) = throttle.withLock({ $0.decide(name: name, address: address, now: now) }) {
            Self.count("throttled")
            return .throttled(retryAfter: wait)
        }
        let account = try await account(named: name)
        let matches = await Self.verify(password, against: account?.passwordHash ?? decoy)
        guard let account, matches else {
            throttle.withLock { $0.recordFailure(name: name, address: address, now: clock.now()) }
            Self.count("refused")
            return .refused
        }
        throttle.withLock { $0.recordSuccess(name: name) }
        Self.count("signed_in")
        let token = ConsoleToken.random()
        let record = ConsoleSessionRecord(
            id: token.sessionID,
            operatorName: account.name,
            role: account.role,
            createdAt: now,
            expiresAt: now + configuration.sessionLifetime.milliseconds
        )
        // Expired sessions go with each sign-in: the table holds at most the sessions of one
        // lifetime.
        try await store.apply([.deleteExpiredConsoleSessions(before: now), .saveConsoleSession(record)])
        return .signedIn(token, account)
    }

    /// Ends the session (on every node: it is gone from the store).
    func signOut(_ signedIn: SignedIn) async throws {
        try await store.apply(.deleteConsoleSession(id: signedIn.token.sessionID))
    }

    private static func count(_ outcome: String) {
        Counter(label: "herald_console_sign_ins_total", dimensions: [("outcome", outcome)]).increment()
    }

    /// Argon2id takes a large block of memory and tens of milliseconds on purpose: off the
    /// cooperative pool, so sign-ins never stall the relay's requests.
    private static func verify(_ password: String, against hash: String) async -> Bool {
        await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(returning: PasswordHash.verify(password, against: hash))
            }
        }
    }
}
