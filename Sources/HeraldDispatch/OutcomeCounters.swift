import HeraldPush
import HeraldStore
import Metrics
import Synchronization

/// `herald_relay_pushes_completed_total{state,app,network}`: each push's final outcome, by its app
/// and network, so an operator sees one tenant's failures apart from another's. The counters are
/// made once per (state, app, network) and kept: apps are few, pushes many.
final class OutcomeCounters: Sendable {
    private struct Key: Hashable {
        var state: PushState
        var app: String
        var network: PushNetwork
    }

    private let counters = Mutex<[Key: Counter]>([:])

    /// Counts one push that ended in `state`.
    func count(_ state: PushState, _ entry: OutboxEntry) {
        let key = Key(state: state, app: entry.app, network: entry.network)
        let counter = counters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(
                label: "herald_relay_pushes_completed_total",
                dimensions: [("state", state.rawValue), ("app", entry.app), ("network", entry.network.rawValue)]
            )
            counters[key] = counter
            return counter
        }
        counter.increment()
    }
}
