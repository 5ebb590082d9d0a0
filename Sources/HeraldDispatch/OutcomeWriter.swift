import HeraldBatching
import HeraldDomain
import HeraldStore
import Logging
import Synchronization

/// The dispatcher's outcome writes: every `complete` goes through here, and while the store
/// fails it is tried again (`OutcomeWriteMachine` decides; this does the I/O), so that a push a
/// network accepted is recorded when the store answers again rather than sent a second time when
/// its lease ends.
final class OutcomeWriter: Sendable {
    private let store: any OutboxStore
    private let logger: Logger
    private let clock: any HeraldClock
    private let machine = Mutex(OutcomeWriteMachine())
    /// When writes stop being retried (set at a graceful stop); a monotonic instant, since the
    /// relay's clock may be a test's and stand still.
    private let deadline = Mutex<ContinuousClock.Instant?>(nil)
    /// Ends the retries' waits when the deadline is set.
    private let stopping = WakeSignal()
    /// Wakes loops held while outcomes wait (`waitWhileHeld`).
    private let resumed = WakeSignal()

    init(store: any OutboxStore, logger: Logger, clock: any HeraldClock) {
        self.store = store
        self.logger = logger
        self.clock = clock
    }

    /// Whether the loops must not claim: outcomes wait that a write failed to record.
    var holdsClaims: Bool { machine.withLock(\.holdsClaims) }

    /// Outcomes handed over and not yet written.
    var pending: Int { machine.withLock(\.pending) }

    /// Counts `count` outcomes as pending, before they go to the outcome batcher or to `write`: from
    /// now on they hold the claims should a write fail.
    func hand(_ count: Int) {
        _ = machine.withLock { $0.handle(.handed(count: count)) }
    }

    /// Returns when the claims are released, after `timeout`, or on cancellation.
    func waitWhileHeld(timeout: Duration) async {
        guard holdsClaims else { return }
        await resumed.wait(timeout: timeout)
    }

    /// From now on a failing write is given up `within` from now (a graceful stop must end even
    /// with the store away); a write in a retry's wait tries once more at once.
    func stop(within: Duration) {
        let set = deadline.withLock { deadline -> Bool in
            guard deadline == nil else { return false }
            deadline = .now + within
            return true
        }
        if set { stopping.signalAll() }
    }

    /// Records `batches` (counted with `hand` before), trying again while the store fails, until
    /// it answers or the stop's deadline passes. A cancelled task (a hard stop, not a graceful
    /// one) cannot wait for the store: a failed write is given up at once.
    func write(_ batches: [CompletionBatch]) async {
        let count = batches.reduce(0) { $0 + $1.completions.count }
        var attempt = 0
        while true {
            do {
                try await store.complete(batches)
                act(machine.withLock { $0.handle(.written(count: count, at: clock.now())) }, error: nil)
                return
            } catch {
                attempt += 1
                act(machine.withLock { $0.handle(.failed(at: clock.now())) }, error: error)
                let delay = machine.withLock { $0.retryDelay(attempt: attempt) }
                let left = Task.isCancelled ? .zero : deadline.withLock({ $0 }).map({ $0 - .now })
                if let left {
                    guard left > .zero else {
                        act(machine.withLock { $0.handle(.gaveUp(count: count, at: clock.now())) }, error: error)
                        return
                    }
                    await stopping.wait(timeout: min(delay, left))
                } else {
                    // Woken early only by the stop: then the deadline applies from the next try.
                    await stopping.wait(timeout: delay)
                }
            }
        }
    }

    private func act(_ actions: [OutcomeWriteMachine.Action], error: (any Error)?) {
        for action in actions {
            switch action {
            case .startedFailing(let pending):
                logger.error(
                    "cannot record push outcomes: keeping them and trying again until the database answers; no pushes are claimed meanwhile",
                    metadata: ["error": "\(error.map { "\($0)" } ?? "")", "outcomes": .stringConvertible(pending)]
                )
            case .recovered(let downFor, let failures):
                logger.notice(
                    "push outcomes are recorded again",
                    metadata: [
                        "failed_for_ms": .stringConvertible(downFor), "failed_writes": .stringConvertible(failures),
                    ]
                )
            case .gaveUp(let count):
                logger.error(
                    "stopping without recording push outcomes: their pushes are sent again when their leases end",
                    metadata: ["error": "\(error.map { "\($0)" } ?? "")", "outcomes": .stringConvertible(count)]
                )
            case .resumeClaims:
                resumed.signalAll()
            }
        }
    }
}
