/// The access tokens a sandbox token endpoint granted (Google's for FCM, Huawei's for Push Kit),
/// each with what it allows, until it expires. Kept inside the endpoint's own state, under its lock.
struct AccessTokenLedger<Grant: Sendable>: Sendable {
    private struct Entry {
        let grant: Grant
        var expiresAt: ContinuousClock.Instant
    }

    private var tokens: [String: Entry] = [:]
    /// How many tokens were granted: a sender that caches its token makes one grant, not one per
    /// message.
    private(set) var grants = 0

    /// Records a new token valid for `lifetime` from `now`; past 10,000 tokens the expired ones go.
    mutating func issue(_ token: String, _ grant: Grant, now: ContinuousClock.Instant, lifetime: Duration) {
        if tokens.count >= 10_000 { tokens = tokens.filter { $0.value.expiresAt > now } }
        tokens[token] = Entry(grant: grant, expiresAt: now + lifetime)
        grants += 1
    }

    /// Makes every token granted so far expired.
    mutating func expireAll(at now: ContinuousClock.Instant) {
        for key in tokens.keys { tokens[key]?.expiresAt = now }
    }

    /// What `token` allows, nil unless it was granted here and has not expired.
    func grant(of token: String, at now: ContinuousClock.Instant) -> Grant? {
        guard let entry = tokens[token], now < entry.expiresAt else { return nil }
        return entry.grant
    }

    /// Whether `token` was granted here, expired or not.
    func knows(_ token: String) -> Bool { tokens[token] != nil }
}
