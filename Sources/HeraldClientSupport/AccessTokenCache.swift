public import Metrics

/// The OAuth 2.0 access token every send of a push client uses (FCM's service-account token,
/// Push Kit's client-credentials token): fetched once, shared by all sends, replaced shortly
/// before it expires or once after the network refused it as stale.
///
/// An actor because every concurrent send reads it; one refresh runs at a time and the others
/// wait for it rather than each asking the token endpoint for its own.
public actor AccessTokenCache {
    /// What the token endpoint granted.
    public struct Grant: Sendable {
        public var token: String
        /// `expires_in`.
        public var lifetime: Duration

        public init(token: String, lifetime: Duration) {
            self.token = token
            self.lifetime = lifetime
        }
    }

    private struct Current {
        var token: String
        var refreshAt: ContinuousClock.Instant
    }

    private let margin: Duration
    private let fetch: @Sendable () async throws -> Grant
    private let refreshes: Counter
    private var current: Current?
    private var refreshing: Task<Current, any Error>?

    /// - Parameters:
    ///   - margin: A token is replaced this long before it expires (or at half its life, if
    ///     shorter), so no send goes out with one about to lapse.
    ///   - refreshes: Counts the token endpoint's grants (`herald_<network>_token_refreshes_total`).
    ///   - fetch: Asks the token endpoint for a new token.
    public init(margin: Duration, refreshes: Counter, fetch: @escaping @Sendable () async throws -> Grant) {
        self.margin = margin
        self.refreshes = refreshes
        self.fetch = fetch
    }

    /// A valid access token, from the cache when it has time left.
    public func token() async throws -> String {
        if let current, ContinuousClock.now < current.refreshAt { return current.token }
        return try await refresh().token
    }

    /// Forgets `token` after the network refused it, unless a newer one already replaced it.
    public func invalidate(_ token: String) {
        if current?.token == token { current = nil }
    }

    private func refresh() async throws -> Current {
        if let refreshing { return try await refreshing.value }
        let (fetch, margin, refreshes) = (fetch, margin, refreshes)
        let task = Task {
            refreshes.increment()
            // Counted from before the request: the endpoint's clock started no later.
            let started = ContinuousClock.now
            let grant = try await fetch()
            return Current(token: grant.token, refreshAt: started + grant.lifetime - min(margin, grant.lifetime / 2))
        }
        refreshing = task
        defer { refreshing = nil }
        let fresh = try await task.value
        current = fresh
        return fresh
    }
}
