public import HeraldAPNsCore
public import HeraldDomain
import Synchronization

/// The one provider token of a (team, key), shared by every connection and request.
///
/// Signing a token per connection or per worker is the classic cause of 429
/// TooManyProviderTokenUpdates; here a token is made once and replaced only when it is old enough
/// (`refreshAfter`, Apple allows 20 to 60 minutes) or when APNs says it expired, and never more
/// often than `minimumInterval`.
///
/// With `coordination: .shared`, the token is the cluster's: this manager never signs one itself
/// and uses what it is given (`adopt(_:)`) by whoever coordinates the nodes (Herald's
/// `SharedProviderToken`), which it tells when APNs refuses the token (`onStale`). `current()`
/// stays a lock and a read either way: it is on every push's path.
public final class ProviderTokenManager: Sendable {
    /// Where tokens come from.
    public enum Coordination: Sendable {
        /// This manager signs its own, as the only sender with its key.
        case local
        /// Several processes send with the key: tokens are adopted, never signed here. `onStale`
        /// hears of a token APNs refused (expired, invalid, or another token too recently made),
        /// so the coordinator looks at the shared one at once.
        case shared(onStale: @Sendable (ProviderToken) -> Void)
    }

    /// When to replace a token on its own: 50 minutes, inside Apple's 20–60 minute window.
    public static let defaultRefreshAfter: Duration = .seconds(50 * 60)
    /// Apple's limit: no more than one new token per 20 minutes.
    public static let defaultMinimumInterval: Duration = .seconds(20 * 60)

    private struct State {
        var token: ProviderToken?
        var madeAt: ContinuousClock.Instant?
        var generation = 0
    }

    private let signer: ProviderTokenSigner
    private let refreshAfter: Duration
    private let minimumInterval: Duration
    /// Ages tokens: monotonic, so a step of the wall clock neither keeps a token past its hour nor
    /// throws a young one away.
    private let clock = ContinuousClock()
    /// Stamps `iat` and dates a restored token.
    private let wallClock: any HeraldClock
    private let onNewToken: @Sendable (ProviderToken) -> Void
    private let coordination: Coordination
    private let state = Mutex(State())

    /// - Parameters:
    ///   - refreshAfter: Age at which a token is replaced before use.
    ///   - minimumInterval: The least time between two new tokens, even after ExpiredProviderToken.
    ///   - wallClock: The time `iat` says (in whole seconds), and a restored token's age is read
    ///     against.
    ///   - onNewToken: Told each token made, so it can be kept across a restart (`restore(_:)`):
    ///     a restarted provider that signs a new token at once would be refused by APNs as
    ///     TooManyProviderTokenUpdates.
    ///   - coordination: `.shared` when other processes send with the same key.
    public init(
        signer: ProviderTokenSigner,
        refreshAfter: Duration = defaultRefreshAfter,
        minimumInterval: Duration = defaultMinimumInterval,
        wallClock: any HeraldClock = WallClock(),
        onNewToken: @escaping @Sendable (ProviderToken) -> Void = { _ in },
        coordination: Coordination = .local
    ) {
        self.onNewToken = onNewToken
        self.coordination = coordination
        self.signer = signer
        self.refreshAfter = refreshAfter
        self.minimumInterval = minimumInterval
        self.wallClock = wallClock
    }

    /// How many tokens have been signed: a test checks this stays at one per refresh window.
    public var tokensMade: Int { state.withLock { $0.generation } }

    /// Takes up a token made before a restart (the text `onNewToken` was given), if this signer
    /// made it and it is younger than `refreshAfter`. Returns whether it will be used.
    @discardableResult
    public func restore(_ text: String) -> Bool {
        guard let token = signer.restore(text) else { return false }
        let age = wallClock.seconds() - token.issuedAt
        guard age >= 0, Duration.seconds(age) < refreshAfter else { return false }
        let now = clock.now
        state.withLock { state in
            guard state.token == nil else { return }
            state.token = token
            state.madeAt = now - .seconds(age)
        }
        return true
    }

    /// The token the cluster uses now (`coordination: .shared`): it replaces the one held, and
    /// `current()` returns it from now on. Returns false, changing nothing, unless this
    /// manager's signer made it (another key, or a forged token, is never used).
    @discardableResult
    public func adopt(_ token: ProviderToken) -> Bool {
        guard let verified = signer.restore(token.text) else { return false }
        let age = max(0, wallClock.seconds() - verified.issuedAt)
        let now = clock.now
        state.withLock { state in
            guard state.token != verified else { return }
            state.token = verified
            state.madeAt = now - .seconds(age)
        }
        return true
    }

    /// The token held now, if any, without signing one.
    public var held: ProviderToken? { state.withLock { $0.token } }

    /// APNs refused `token` in a way a new token might mend (InvalidProviderToken,
    /// TooManyProviderTokenUpdates): a shared manager tells its coordinator; a local one has
    /// nothing to do (it signs on ExpiredProviderToken only, through `refresh(expired:)`).
    public func rejected(_ token: ProviderToken) {
        if case .shared(let onStale) = coordination { onStale(token) }
    }

    /// The token to use now, signing a new one only when there is none or it is due. A shared
    /// manager never signs: it returns the token adopted last, whatever its age (the coordinator
    /// replaces it in time), and throws while it has none.
    public func current() throws(APNsClientError) -> ProviderToken {
        let now = clock.now
        var made: ProviderToken?
        let shared: Bool
        if case .shared = coordination { shared = true } else { shared = false }
        let token = try state.withLock { (state) throws(APNsClientError) -> ProviderToken in
            if let token = state.token, let madeAt = state.madeAt, shared || now - madeAt < refreshAfter {
                return token
            }
            if shared { throw .signing("no shared provider token has been adopted yet") }
            made = try make(&state, now: now)
            return made!
        }
        if let made { onNewToken(made) }
        return token
    }

    /// APNs answered ExpiredProviderToken for `token`: replace it, once. Concurrent requests that
    /// all saw the same expired token cause one new token, not one each; a replacement sooner than
    /// `minimumInterval` after the last one is refused (the expired token is returned and the
    /// caller retries later).
    /// A shared manager asks its coordinator instead, and returns the token it holds.
    public func refresh(expired token: ProviderToken) throws(APNsClientError) -> ProviderToken {
        if case .shared(let onStale) = coordination {
            onStale(token)
            return try current()
        }
        let now = clock.now
        var made: ProviderToken?
        let result = try state.withLock { (state) throws(APNsClientError) -> ProviderToken in
            if let current = state.token, current != token { return current }
            if let madeAt = state.madeAt, now - madeAt < minimumInterval, let current = state.token {
                return current
            }
            made = try make(&state, now: now)
            return made!
        }
        if let made { onNewToken(made) }
        return result
    }

    private func make(_ state: inout State, now: ContinuousClock.Instant) throws(APNsClientError) -> ProviderToken {
        do {
            let token = try signer.makeToken(issuedAt: wallClock.seconds())
            state.token = token
            state.madeAt = now
            state.generation += 1
            return token
        } catch {
            throw .signing("\(error)")
        }
    }
}
