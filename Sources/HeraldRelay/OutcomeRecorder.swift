public import HeraldStore
import Synchronization

/// Records the outcomes of finished pushes a little late and together: a batch's outcomes wait
/// up to `linger` for the batches other loops finish meanwhile, and all of them go to the store
/// in one `complete(_:)`, each at its own time.
///
/// Why: a loop that recorded its own batch at once paid a store write (on PostgreSQL a
/// statement, its planning and a commit; on SQLite a synced transaction) for the few pushes it
/// had just sent; in the relay benchmark that was 9,000 writes for 100,000 pushes, 11 pushes
/// each. A finished push holds nothing meanwhile: its claim's lease outlives the wait by far,
/// and nothing but this node sends it. The price is the window in which a crash makes a push go
/// twice (its lease ends unrecorded, another node sends it again: at least once, as before),
/// longer by `linger`.
///
/// Only final outcomes wait (delivered, failed, expired, skipped, and dead tokens with nothing to
/// clear): a push back in the queue or a token to clear is recorded at once by the dispatcher,
/// as other loops claim from what it writes.
///
/// Bounded: while `limit` outcomes wait or are being written, `record` waits for the write, so a
/// store that cannot keep up (or is down: the write is tried again until it answers) holds the
/// loops rather than memory, and a crash leaves at most `limit` finished pushes unrecorded. `flush()` (at the dispatcher's stop) writes what
/// waits at once and returns when it is written.
public final class OutcomeRecorder: Sendable {
    /// Writes outcomes; returns once they are written (the dispatcher's writer tries again while
    /// the store fails, and gives up only at a stop's deadline: then their leases end on their own).
    public typealias Write = @Sendable ([CompletionBatch]) async -> Void

    private struct State {
        var waiting: [CompletionBatch] = []
        /// Outcomes waiting or being written.
        var outcomes = 0
        /// A writer runs (lingering or writing): what is recorded meanwhile is its next write.
        var writing = false
        /// `record` calls waiting for room.
        var full: [CheckedContinuation<Void, Never>] = []
        /// `flush` calls waiting for the writer to be done; while there are, it does not linger.
        var flushed: [CheckedContinuation<Void, Never>] = []
    }

    /// How long outcomes wait for others before the write.
    public let linger: Duration
    /// Outcomes waiting or being written at most before `record` waits.
    public let limit: Int
    private let write: Write
    private let state = Mutex(State())
    private let hurry = WakeSignal()

    public init(linger: Duration, limit: Int, write: @escaping Write) {
        self.linger = linger
        self.limit = max(1, limit)
        self.write = write
    }

    /// Records `completions` (final outcomes), decided at `now`, with the next write; returns at
    /// once unless `limit` outcomes wait already.
    public func record(_ completions: [PushCompletion], now: Int64) async {
        guard !completions.isEmpty else { return }
        let (start, full) = state.withLock { state -> (Bool, Bool) in
            state.waiting.append(CompletionBatch(completions: completions, now: now))
            state.outcomes += completions.count
            let start = !state.writing
            state.writing = true
            return (start, state.outcomes >= limit)
        }
        if start { Task { await self.run() } }
        if full {
            hurry.signal()
            await withCheckedContinuation { continuation in
                let room = state.withLock { state -> Bool in
                    if state.outcomes < limit { return true }
                    state.full.append(continuation)
                    return false
                }
                if room { continuation.resume() }
            }
        }
    }

    /// Writes whatever waits without lingering; returns when nothing waits and no write runs.
    public func flush() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                guard state.writing else { return true }
                state.flushed.append(continuation)
                return false
            }
            if done { continuation.resume() } else { hurry.signal() }
        }
    }

    /// The writer: lingers, takes everything waiting, writes it; again until nothing waits.
    private func run() async {
        while true {
            let hurried = state.withLock { !$0.flushed.isEmpty || $0.outcomes >= limit }
            if !hurried { await hurry.wait(timeout: linger) }
            let batches = state.withLock { state -> [CompletionBatch] in
                defer { state.waiting = [] }
                return state.waiting
            }
            if !batches.isEmpty { await write(batches) }
            let written = batches.reduce(0) { $0 + $1.completions.count }
            let (room, done) = state.withLock {
                state -> ([CheckedContinuation<Void, Never>], [CheckedContinuation<Void, Never>]?) in
                state.outcomes -= written
                var room: [CheckedContinuation<Void, Never>] = []
                if state.outcomes < limit { swap(&room, &state.full) }
                guard state.waiting.isEmpty else { return (room, nil) }
                state.writing = false
                defer { state.flushed = [] }
                return (room, state.flushed)
            }
            for waiter in room { waiter.resume() }
            if let done {
                for waiter in done { waiter.resume() }
                return
            }
        }
    }
}
