import Synchronization

/// Work that arrives together is done together: each caller submits one item and waits for its
/// outcome; the items waiting when a batch may start go in it, and one call of the batch's
/// handler does them all (one transaction, one statement, one round trip).
///
/// A batch starts at once when fewer than `Rules.maxInFlight` run, so a lone item never waits
/// for company; under load, what arrives while a batch runs shares the next. The one batching
/// rule of the store's writes and reads: SQLite's group commit, PostgreSQL's batched ingests and
/// recipient reads.
///
/// Each batch runs in a task of its own that ends with the queue: nothing lives on between
/// bursts, so there is no service to start or stop.
///
/// Or, for work whose callers need not wait for it (the dispatcher's finished outcomes), items
/// are `enqueue`d and the batches done by `run`, in the task of whoever runs it (a service's
/// task group): each batch lingers up to `Rules.linger` for company, and `Rules.maxPending`
/// bounds what waits. A batcher is used one way or the other, not both.
public final class Batcher<Item: Sendable, Outcome: Sendable>: Sendable {
    /// Does a batch; answers one result per item, in the batch's order.
    public typealias Handle = @Sendable ([Item]) async -> [Result<Outcome, any Error>]

    /// Which waiting items may share a batch.
    public struct Rules: Sendable {
        /// Batches running at once.
        public var maxInFlight: Int
        /// Items in one batch at most.
        public var maxItems: Int
        /// The weight of one batch at most (its items' `weight` summed); a heavier item goes in a
        /// batch of its own.
        public var maxWeight: Int
        /// An item's weight (say, the keys a read asks for).
        public var weight: @Sendable (Item) -> Int
        /// The keys two items of one batch must not share (say, an idempotency key): the second
        /// waits for the next batch, so whatever does the batch decides between them as it
        /// would between two separate calls.
        public var keys: @Sendable (Item) -> [String]
        /// `run` only: how long a batch waits for company once an item waits, unless the items
        /// waiting reach `maxPending` or the run is told to finish. Zero: each goes at once.
        public var linger: Duration
        /// `enqueue` only: the weight queued or being done at which `enqueue` waits for room (and
        /// the batch goes without lingering): whoever cannot keep up holds the callers, not
        /// memory.
        public var maxPending: Int

        public init(
            maxInFlight: Int = 1,
            maxItems: Int,
            maxWeight: Int = .max,
            weight: @escaping @Sendable (Item) -> Int = { _ in 1 },
            keys: @escaping @Sendable (Item) -> [String] = { _ in [] },
            linger: Duration = .zero,
            maxPending: Int = .max
        ) {
            self.maxInFlight = max(1, maxInFlight)
            self.maxItems = max(1, maxItems)
            self.maxWeight = maxWeight
            self.weight = weight
            self.keys = keys
            self.linger = linger
            self.maxPending = max(1, maxPending)
        }

        /// The positions of `waiting` that go in the next batch, in order: each item that fits
        /// (room, weight, no shared key) is taken; the first always is.
        public func take(from waiting: [Item]) -> [Int] {
            var taken: [Int] = []
            var weight = 0
            var keys = Set<String>()
            for (index, item) in waiting.enumerated() where taken.count < maxItems {
                let itemWeight = self.weight(item)
                let itemKeys = self.keys(item)
                guard taken.isEmpty || (weight + itemWeight <= maxWeight && keys.isDisjoint(with: itemKeys)) else {
                    continue
                }
                taken.append(index)
                weight += itemWeight
                keys.formUnion(itemKeys)
            }
            return taken
        }
    }

    private struct Waiting {
        let item: Item
        let continuation: CheckedContinuation<Outcome, any Error>
    }

    private struct State {
        var waiting: [Waiting] = []
        var running = 0
        /// Enqueued, for `run`.
        var queued: [Item] = []
        /// The weight enqueued and not yet done (queued or in `run`'s batch).
        var pending = 0
        /// `enqueue` calls waiting for room.
        var full: [CheckedContinuation<Void, Never>] = []
        /// `run` waiting for an item (or `finish`).
        var idle: CheckedContinuation<Void, Never>?
        /// `finish` was called: `run` does what waits without lingering, then returns.
        var finishing = false
    }

    public let rules: Rules
    private let state = Mutex(State())
    /// Ends `run`'s linger early: the items waiting reached `maxPending`, or `finish`.
    private let hurry = WakeSignal()

    public init(rules: Rules) {
        self.rules = rules
    }

    /// Does `item` in some batch, with `handle` (every caller gives the same one); answers its
    /// outcome.
    public func submit(_ item: Item, handle: @escaping Handle) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            let batch = state.withLock { state -> [Waiting]? in
                state.waiting.append(Waiting(item: item, continuation: continuation))
                return nextBatch(&state)
            }
            if let batch { start(batch, handle: handle) }
        }
    }

    /// Takes the next batch if one may start now.
    private func nextBatch(_ state: inout State) -> [Waiting]? {
        guard state.running < rules.maxInFlight, !state.waiting.isEmpty else { return nil }
        let taken = rules.take(from: state.waiting.map(\.item))
        let batch = taken.map { state.waiting[$0] }
        let positions = Set(taken)
        state.waiting = state.waiting.enumerated().filter { !positions.contains($0.offset) }.map(\.element)
        state.running += 1
        return batch
    }

    private func start(_ batch: [Waiting], handle: @escaping Handle) {
        Task {
            let results = await handle(batch.map(\.item))
            for (index, waiting) in batch.enumerated() {
                guard index < results.count else {
                    waiting.continuation.resume(throwing: BatchError.missingOutcome)
                    continue
                }
                waiting.continuation.resume(with: results[index])
            }
            let next = self.state.withLock { state -> [Waiting]? in
                state.running -= 1
                return self.nextBatch(&state)
            }
            if let next { self.start(next, handle: handle) }
        }
    }

    // MARK: - Enqueued items, done by `run`

    /// Hands `item` to the batches `run` does, without waiting for it to be done: returns at once,
    /// unless the weight queued or being done reaches `Rules.maxPending`; then the batch goes
    /// without lingering, and this returns once what is done brings the weight below it.
    public func enqueue(_ item: Item) async {
        let weight = rules.weight(item)
        let (idle, full) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Bool) in
            state.queued.append(item)
            state.pending += weight
            defer { state.idle = nil }
            return (state.idle, state.pending >= rules.maxPending)
        }
        idle?.resume()
        guard full else { return }
        hurry.signal()
        await withCheckedContinuation { continuation in
            let room = state.withLock { state -> Bool in
                if state.pending < rules.maxPending { return true }
                state.full.append(continuation)
                return false
            }
            if room { continuation.resume() }
        }
    }

    /// Does the enqueued items' batches in this task, one at a time, as `rules.take` groups
    /// them: once an item waits, the batch lingers up to `Rules.linger` for others (less when
    /// hurried), then `work` does it. Runs until `finish()`, then does what waits at once and
    /// returns. One run at a time.
    ///
    /// Cancellation ends the lingers, not the run: items enqueued are still done (a caller's
    /// work is not dropped because the task running them is cancelled), and `run` returns only
    /// after `finish()`.
    public func run(_ work: @Sendable ([Item]) async -> Void) async {
        while true {
            let step = state.withLock { state -> RunStep in
                if !state.queued.isEmpty {
                    return .batch(hurried: state.finishing || state.pending >= rules.maxPending)
                }
                if state.finishing {
                    state.finishing = false
                    return .done
                }
                return .idle
            }
            switch step {
            case .done:
                return
            case .idle:
                // Not cancellable: an idle run has nothing to stop, and ends at `finish`.
                await withCheckedContinuation { continuation in
                    let now = state.withLock { state -> Bool in
                        if !state.queued.isEmpty || state.finishing { return true }
                        state.idle = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            case .batch(let hurried):
                if !hurried, rules.linger > .zero { await hurry.wait(timeout: rules.linger) }
                let batch = state.withLock { state -> [Item] in
                    let taken = rules.take(from: state.queued)
                    let positions = Set(taken)
                    defer {
                        state.queued = state.queued.enumerated().filter { !positions.contains($0.offset) }
                            .map(\.element)
                    }
                    return taken.map { state.queued[$0] }
                }
                if !batch.isEmpty { await work(batch) }
                let done = batch.reduce(0) { $0 + rules.weight($1) }
                let room = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                    state.pending -= done
                    guard state.pending < rules.maxPending else { return [] }
                    defer { state.full = [] }
                    return state.full
                }
                for waiter in room { waiter.resume() }
            }
        }
    }

    /// What `run` does next.
    private enum RunStep {
        /// A batch, lingering first unless hurried.
        case batch(hurried: Bool)
        /// Wait for an item.
        case idle
        /// Finished, nothing waits: return.
        case done
    }

    /// Ends `run` once every item enqueued before is done: what waits goes at once, without
    /// lingering. (Before `run` starts, the next run does what waits and returns.)
    public func finish() {
        let idle = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.finishing = true
            defer { state.idle = nil }
            return state.idle
        }
        idle?.resume()
        hurry.signal()
    }

    /// The weight enqueued and not yet done.
    public var pending: Int { state.withLock(\.pending) }

    /// A handler from a throwing one: when the batch fails, each item is done again alone, so
    /// one bad item fails alone.
    public static func eachAloneOnFailure(
        _ work: @escaping @Sendable ([Item]) async throws -> [Outcome]
    ) -> Handle {
        { items in
            let results = await every(items, work)
            guard items.count > 1, case .failure = results.first else { return results }
            var alone: [Result<Outcome, any Error>] = []
            for item in items { alone += await every([item], work) }
            return alone
        }
    }

    /// A handler from a throwing one whose failure fails every item of the batch.
    public static func allOrNothing(_ work: @escaping @Sendable ([Item]) async throws -> [Outcome]) -> Handle {
        { items in await every(items, work) }
    }

    /// `work`'s outcomes for `items`, or its error for each of them.
    private static func every(
        _ items: [Item],
        _ work: @Sendable ([Item]) async throws -> [Outcome]
    ) async -> [Result<Outcome, any Error>] {
        do {
            let outcomes = try await work(items)
            guard outcomes.count == items.count else { throw BatchError.missingOutcome }
            return outcomes.map { .success($0) }
        } catch {
            return items.map { _ in .failure(error) }
        }
    }
}

/// A batch handler answered fewer outcomes than it had items.
public struct BatchError: Error, Sendable, Hashable {
    private enum Code: Hashable, Sendable {
        case missingOutcome
    }

    private let code: Code

    /// The handler's answer left an item without an outcome.
    public static let missingOutcome = Self(code: .missingOutcome)
}
