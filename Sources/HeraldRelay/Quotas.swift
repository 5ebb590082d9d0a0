import HeraldStore
import Metrics
import Synchronization

/// A rate with a burst: `burst` tokens at most, refilled at `rate` a second.
public struct TokenBucket: Sendable, Hashable {
    public let rate: Double
    public let burst: Double
    private var tokens: Double
    private var updatedAt: Int64

    /// A full bucket at `now` (milliseconds).
    public init(rate: Double, burst: Int, now: Int64) {
        self.rate = rate
        self.burst = Double(burst)
        tokens = Double(burst)
        updatedAt = now
    }

    /// How long until `count` tokens are there at `now`; zero when they are there now.
    public mutating func wait(for count: Int, at now: Int64) -> Duration {
        refill(at: now)
        let missing = Double(count) - tokens
        guard missing > 0 else { return .zero }
        // More than the bucket holds never fits: the wait of a full bucket's worth, and the
        // request is refused as long as it asks for more than `burst`.
        return .milliseconds(Int64((missing / rate * 1000).rounded(.up)))
    }

    /// Takes `count` tokens (callers check `wait` first).
    public mutating func take(_ count: Int, at now: Int64) {
        refill(at: now)
        tokens -= Double(count)
    }

    private mutating func refill(at now: Int64) {
        if now > updatedAt {
            tokens = min(burst, tokens + Double(now - updatedAt) / 1000 * rate)
            updatedAt = now
        }
    }
}

/// An app's message quota: messages a second with a burst, counted over the messages sent with
/// the app's API keys.
public struct MessageQuota: Sendable, Hashable {
    public var messagesPerSecond: Double
    public var burst: Int

    /// - Parameter burst: one second's worth (at least 1) when `nil`.
    public init(messagesPerSecond: Double, burst: Int?) {
        self.messagesPerSecond = messagesPerSecond
        self.burst = burst ?? max(1, Int(messagesPerSecond.rounded(.up)))
    }
}

/// The quotas of this node: per app (the configuration's, replaced on SIGHUP) and per key (the
/// key's own). Kept per node: with several nodes behind a balancer, each node allows its share.
///
/// Calls are never counted: a call must ring however many messages an app sends.
public final class QuotaBook: Sendable {
    private struct State {
        var apps: [String: MessageQuota]
        var defaultQuota: MessageQuota?
        var buckets: [String: TokenBucket] = [:]
    }

    private let state: Mutex<State>
    private let refusals = Mutex<[String: Counter]>([:])

    /// - Parameters:
    ///   - apps: each app's quota.
    ///   - defaultQuota: the quota of an app not in `apps`; `nil`: none.
    public init(apps: [String: MessageQuota] = [:], defaultQuota: MessageQuota? = nil) {
        state = Mutex(State(apps: apps, defaultQuota: defaultQuota))
    }

    /// Replaces the apps' quotas (a reload); buckets whose quota did not change keep their level.
    public func replace(apps: [String: MessageQuota], defaultQuota: MessageQuota?) {
        state.withLock { state in
            state.apps = apps
            state.defaultQuota = defaultQuota
            state.buckets = state.buckets.filter { key, bucket in
                guard key.hasPrefix("app:") else { return true }
                let quota = apps[String(key.dropFirst(4))] ?? defaultQuota
                return quota.map { $0.messagesPerSecond == bucket.rate && Double($0.burst) == bucket.burst } ?? false
            }
        }
    }

    /// Admits `count` messages of `caller` at `now`, or refuses them all with 429: taken from the
    /// key's bucket and its app's together, or from neither.
    public func admit(_ caller: Caller, count: Int, at now: Int64) throws(RelayError) {
        // The configured admin key, and a key of no app and no rate: nothing to count, no lock.
        guard caller.appID != nil || caller.ratePerSecond != nil else { return }
        let refusal: (quota: String, wait: Duration, what: String)? = state.withLock { state in
            var limits: [(key: String, quota: MessageQuota, what: String)] = []
            if let id = caller.keyID, let rate = caller.ratePerSecond {
                let quota = MessageQuota(messagesPerSecond: rate, burst: caller.burst)
                limits.append(("key:" + id, quota, "the key's"))
            }
            if let app = caller.appID, let quota = state.apps[app] ?? state.defaultQuota {
                limits.append(("app:" + app, quota, "app \(app)'s"))
            }
            if let limit = limits.first(where: { count > $0.quota.burst }) {
                // No wait would let it through: the bucket never holds that many.
                return (String(limit.key.prefix { $0 != ":" }), .zero, limit.what)
            }
            var refused: (quota: String, wait: Duration, what: String)?
            for limit in limits {
                var bucket =
                    state.buckets[limit.key]
                    ?? TokenBucket(rate: limit.quota.messagesPerSecond, burst: limit.quota.burst, now: now)
                let wait = bucket.wait(for: count, at: now)
                state.buckets[limit.key] = bucket
                if wait > .zero, wait > (refused?.wait ?? .zero) {
                    refused = (String(limit.key.prefix { $0 != ":" }), wait, limit.what)
                }
            }
            guard refused == nil else { return refused }
            for limit in limits { state.buckets[limit.key]?.take(count, at: now) }
            return nil
        }
        guard let refusal else { return }
        counter(app: caller.appID ?? "", quota: refusal.quota).increment()
        if refusal.wait == .zero {
            throw RelayError.invalidField(
                "to",
                "asks for \(count) messages at once; \(refusal.what) quota allows fewer at once (its burst)"
            )
        }
        // Whole seconds, rounded up: `Retry-After` has no finer unit.
        let seconds = max(1, Int((refusal.wait / .seconds(1)).rounded(.up)))
        throw RelayError.tooManyRequests(
            "\(refusal.what) message quota is spent: \(count) message\(count == 1 ? "" : "s") may be sent again in \(seconds) s",
            retryAfter: .seconds(seconds)
        )
    }

    private func counter(app: String, quota: String) -> Counter {
        refusals.withLock { counters in
            let key = app + "\u{0}" + quota
            if let counter = counters[key] { return counter }
            let counter = Counter(
                label: "herald_relay_quota_refusals_total",
                dimensions: [("app", app), ("quota", quota)]
            )
            counters[key] = counter
            return counter
        }
    }
}

/// Each app's cap on queued messages: a backend whose pushes pile up (a network refusing, a
/// flood) is refused with 429 before it fills the outbox for every app. Counted from the store
/// (every node's queue), read at most once a second per app and node, and raised locally by each
/// message admitted between two reads. Calls are never refused by it.
public final class QueueCaps: Sendable {
    private struct Count {
        var queued: Int
        var readAt: Int64
    }

    private let caps: Mutex<(apps: [String: Int], defaultCap: Int?)>
    private let counts = Mutex<[String: Count]>([:])
    /// How long a count read from the store is used (milliseconds).
    static let freshness: Int64 = 1_000

    public init(apps: [String: Int] = [:], defaultCap: Int? = nil) {
        caps = Mutex((apps, defaultCap))
    }

    /// Replaces the caps (a reload).
    public func replace(apps: [String: Int], defaultCap: Int?) {
        caps.withLock { $0 = (apps, defaultCap) }
    }

    /// The cap of `app`, if it has one.
    public func cap(of app: String) -> Int? {
        caps.withLock { $0.apps[app] ?? $0.defaultCap }
    }

    /// Admits `count` messages for `app` at `now`, reading the queued count with `read` when the
    /// one known is older than a second; 429 when the app's queue is at its cap.
    public func admit(
        app: String,
        count: Int,
        at now: Int64,
        read: (String) async throws(RelayError) -> Int
    ) async throws(RelayError) {
        guard let cap = cap(of: app) else { return }
        let known = counts.withLock { $0[app] }
        let queued: Int
        if let known, now - known.readAt < Self.freshness {
            queued = known.queued
        } else {
            queued = try await read(app)
            counts.withLock { $0[app] = Count(queued: queued, readAt: now) }
        }
        guard queued + count <= cap else {
            throw RelayError.tooManyRequests(
                "app \(app) has \(queued) messages queued, its cap is \(cap): send again once the queue drains",
                retryAfter: .seconds(5)
            )
        }
        // Admitted messages count until the next read sees them queued (or sent).
        counts.withLock { counts in
            if var entry = counts[app] {
                entry.queued += count
                counts[app] = entry
            }
        }
    }
}
