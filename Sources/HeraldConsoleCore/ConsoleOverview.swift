public import HeraldPush
public import HeraldStore

/// The overview page's figures for the last hour, from what the store read (`PushActivity`):
/// pushes per minute by outcome and by network, the push networks' answers, the share of
/// delivered pushes the phones reported shown, and how long pushes took to be accepted by their
/// network and then shown.
public struct ConsoleOverview: Sendable {
    /// The minutes shown, oldest first, as minutes since the epoch.
    public var minutes: [Int64]
    /// Finished pushes per minute (by the minute they finished), one series per final state.
    public var byOutcome: [SVGChart.Series]
    /// Finished pushes per minute, one series per network.
    public var byNetwork: [SVGChart.Series]
    /// The answers behind the finished pushes, most frequent first.
    public var answers: [Answer]
    /// Finished pushes in the hour.
    public var total: Int
    /// Of the sampled pushes the network accepted, the share whose phone reported them shown;
    /// nil when none was accepted.
    public var shownRatio: Double?
    /// Accepted by the relay → accepted by the push network, over the sampled delivered pushes.
    public var toAccepted: Percentiles?
    /// Accepted by the push network → shown on the phone, over the sampled pushes with a shown
    /// receipt.
    public var toShown: Percentiles?
    /// How many finished pushes the latencies were taken from (the newest of the hour).
    public var sampled: Int

    /// One kind of answer: a network, the state it left the push in and its reason.
    public struct Answer: Sendable, Hashable {
        public var network: PushNetwork
        public var state: PushState
        /// The network's reason (`BadDeviceToken`, `UNREGISTERED`) or the relay's; nil for a plain
        /// acceptance.
        public var reason: String?
        public var count: Int
    }

    /// The median and the 99th percentile of a set of durations, in milliseconds.
    public struct Percentiles: Sendable, Hashable {
        public var p50: Int64
        public var p99: Int64
        public var count: Int

        /// Nearest-rank percentiles of `values`; nil when there are none.
        public init?(_ values: [Int64]) {
            guard !values.isEmpty else { return nil }
            let sorted = values.sorted()
            func rank(_ percent: Int) -> Int64 {
                // Nearest rank: the smallest value with at least `percent` % of the values at or
                // below it.
                let index = (percent * sorted.count + 99) / 100 - 1
                return sorted[min(max(index, 0), sorted.count - 1)]
            }
            p50 = rank(50)
            p99 = rank(99)
            count = values.count
        }
    }

    /// The final states in the order the outcome chart stacks them, with their classes.
    static let outcomes: [(PushState, String)] = [
        (.delivered, "s-delivered"), (.failed, "s-failed"), (.tokenDead, "s-token-dead"),
        (.expired, "s-expired"), (.skipped, "s-skipped"),
    ]

    /// The overview of the `minutes` minutes up to and including `now`'s.
    public init(activity: PushActivity, now: Int64, minutes count: Int = 60) {
        let last = now / 60_000
        let first = last - Int64(count) + 1
        minutes = Array(first...last)
        func series(_ key: (PushActivity.Count) -> Bool) -> [Double] {
            var values = [Double](repeating: 0, count: count)
            for row in activity.counts where row.minute >= first && row.minute <= last && key(row) {
                values[Int(row.minute - first)] += Double(row.count)
            }
            return values
        }
        byOutcome = Self.outcomes.map { state, css in
            SVGChart.Series(name: state.rawValue, cssClass: css, values: series { $0.state == state })
        }
        byNetwork = PushNetwork.allCases.map { network in
            SVGChart.Series(
                name: network.rawValue,
                cssClass: "n-" + network.rawValue,
                values: series { $0.network == network }
            )
        }
        var answers: [Answer] = []
        var total = 0
        for row in activity.counts where row.minute >= first && row.minute <= last {
            total += row.count
            if let index = answers.firstIndex(where: {
                $0.network == row.network && $0.state == row.state && $0.reason == row.reason
            }) {
                answers[index].count += row.count
            } else {
                answers.append(Answer(network: row.network, state: row.state, reason: row.reason, count: row.count))
            }
        }
        self.answers = answers.sorted {
            ($0.count, $1.network.rawValue, $1.state.rawValue) > ($1.count, $0.network.rawValue, $0.state.rawValue)
        }
        self.total = total
        let delivered = activity.samples.filter { $0.state == .delivered }
        let shown = delivered.compactMap { sample in sample.shownAt.map { max(0, $0 - sample.updatedAt) } }
        shownRatio = delivered.isEmpty ? nil : Double(shown.count) / Double(delivered.count)
        toAccepted = Percentiles(delivered.map { max(0, $0.updatedAt - $0.createdAt) })
        toShown = Percentiles(shown)
        sampled = activity.samples.count
    }

    /// "HH:MM" (UTC) of each minute shown.
    public var labels: [String] {
        minutes.map { minute in
            let inDay = ((minute % 1440) + 1440) % 1440
            let hour = inDay / 60
            let rest = inDay % 60
            return (hour < 10 ? "0" : "") + "\(hour):" + (rest < 10 ? "0" : "") + "\(rest)"
        }
    }
}
