public import HeraldDomain
import HeraldMacros
public import HeraldPush

/// What became of the pushes that finished since a time, for an overview: how many finished each
/// minute by network, state and reason, and the times of the latest ones (`OutboxStore.pushActivity`).
/// Never what a push carried.
@MemberwiseInit
public struct PushActivity: Sendable, Hashable {
    /// How many pushes finished in one minute with one network, final state and reason.
    @MemberwiseInit
    public struct Count: Sendable, Hashable {
        /// The minute of their last change: `updatedAt / 60_000` (minutes since the epoch).
        public var minute: Int64
        public var network: PushNetwork
        /// A final state (`delivered`, `failed`, `expired`, `token_dead`, `skipped`).
        public var state: PushState
        /// Their last reason (the network's, such as `BadDeviceToken`, or the relay's); `nil`
        /// for none.
        public var reason: String?
        public var count: Int
    }

    /// One finished push's times, never its ids or content.
    @MemberwiseInit
    public struct Sample: Sendable, Hashable {
        public var network: PushNetwork
        public var state: PushState
        /// When it was accepted, milliseconds since the epoch.
        public var createdAt: Int64
        /// When it finished (its last change).
        public var updatedAt: Int64
        /// When the relay received the phone's receipt of stage `shown` for it; `nil` without
        /// one. The relay's clock, like the other two: the phone's own time (`deviceTime`) may
        /// be off by any amount, so a latency from acceptance to showing is measured on this.
        public var shownAt: Int64?
    }

    /// By minute (oldest first), then network, state and reason (none first).
    public var counts: [Count]
    /// The latest finished pushes, the last to finish first.
    public var samples: [Sample]

    /// The most samples a store answers.
    public static let maximumSamples = 10_000
}

extension PushActivity {
    /// The finished pushes' counts since a time as one statement, the same on every engine,
    /// grouped in SQL and read through the outbox's partial `outbox_finished` index (its
    /// condition is repeated word for word, so both engines' planners use it). `placeholder`
    /// spells the engine's parameter number `n` (from 1).
    package static func countsStatement(
        since: Int64,
        placeholder: (Int) -> String
    ) -> (sql: String, values: [StoreValue]) {
        let sql = """
            SELECT o.updated_at / 60000, o.network, o.state, o.last_reason, COUNT(*)
            FROM outbox o
            WHERE o.state NOT IN ('queued', 'sending') AND o.updated_at >= \(placeholder(1))
            GROUP BY o.updated_at / 60000, o.network, o.state, o.last_reason
            """
        return (sql, [.integer(since)])
    }

    /// The latest finished pushes since a time, newest first, with their `shown` receipt's time
    /// (read by `push_receipts`' key), walking `outbox_finished` backwards: no sort of the span.
    /// Pushes that finished at the same millisecond come in no particular order.
    package static func samplesStatement(
        since: Int64,
        limit: Int,
        placeholder: (Int) -> String
    ) -> (sql: String, values: [StoreValue]) {
        let sql = """
            SELECT o.network, o.state, o.created_at, o.updated_at,
                (SELECT r.received_at FROM push_receipts r WHERE r.push_id = o.push_id AND r.stage = 'shown')
            FROM outbox o
            WHERE o.state NOT IN ('queued', 'sending') AND o.updated_at >= \(placeholder(1))
            ORDER BY o.updated_at DESC LIMIT \(placeholder(2))
            """
        let taken = min(max(limit, 0), maximumSamples)
        return (sql, [.integer(since), .integer(Int64(taken))])
    }

    /// The activity of the rows the two statements read: the counts in their documented order,
    /// whatever order the engine grouped them in.
    package init(unorderedCounts: [Count], samples: [Sample]) {
        self.init(counts: unorderedCounts.sorted { Self.order($0) < Self.order($1) }, samples: samples)
    }

    /// Where a count goes in `counts`: by minute, network, state, then no reason before a reason.
    private static func order(_ count: Count) -> (Int64, String, String, Int, String) {
        (count.minute, count.network.rawValue, count.state.rawValue, count.reason == nil ? 0 : 1, count.reason ?? "")
    }
}

extension PushActivity.Count: ColumnsDecodable {
    package init(columns: inout some StoreColumns) throws {
        let minute = try columns.integer()
        let unknown = { (name: String) in "a finished push has an unknown network or state: \(name)" }
        self.init(
            minute: minute,
            network: try columns.named(PushNetwork.self, unknown),
            state: try columns.named(PushState.self, unknown),
            reason: try columns.optionalText(),
            count: try columns.int()
        )
    }
}

extension PushActivity.Sample: ColumnsDecodable {
    package init(columns: inout some StoreColumns) throws {
        let unknown = { (name: String) in "a finished push has an unknown network or state: \(name)" }
        self.init(
            network: try columns.named(PushNetwork.self, unknown),
            state: try columns.named(PushState.self, unknown),
            createdAt: try columns.integer(),
            updatedAt: try columns.integer(),
            shownAt: try columns.optionalInteger()
        )
    }
}

extension PushSummary {
    /// The most pushes `OutboxStore.pushSummaries(ids:)` reads at once.
    public static let maximumLookup = 1_000

    /// The pushes named by `ids` as one statement, found by the outbox's key; `nil` for no ids.
    /// Throws `invalid` for more than `maximumLookup` ids.
    package static func lookupStatement(
        ids: [String],
        placeholder: (Int) -> String
    ) throws(StoreError) -> (sql: String, values: [StoreValue])? {
        guard !ids.isEmpty else { return nil }
        guard ids.count <= maximumLookup else {
            throw StoreError.invalid.with(detail: "at most \(maximumLookup) pushes are read at once, not \(ids.count)")
        }
        let unique = Array(Set(ids))
        let list = unique.indices.map { placeholder($0 + 1) }.joined(separator: ", ")
        let sql = """
            SELECT \(columns)
            FROM outbox o LEFT JOIN devices d ON d.id = o.device_id
            WHERE o.push_id IN (\(list))
            """
        return (sql, unique.map { .text($0) })
    }
}
