import Foundation
import HeraldConsoleCore
import HeraldStore
import Logging
import Metrics
public import ServiceLifecycle
import Synchronization

/// The live stream's one reader of the store per node: while at least one console watches, it
/// polls the store (pushes accepted since a little before its last poll, and the pushes still
/// changing, by id) and hands each new event to every watching console. Fifty consoles cost the
/// store what one does.
public final class LiveFeed: Service, Sendable {
    /// What a watching console receives.
    enum Frame: Sendable {
        /// A push event, as its SSE frame: encoded once per poll, whatever the number of
        /// consoles that receive it.
        case push(String)
        /// Nothing happened for a while: an SSE comment keeps proxies from closing the stream.
        case heartbeat
        /// More pushes were accepted since the last poll than one poll reads: some are not told.
        case gap
        /// A poll's frames, as one piece of the stream.
        case batch(String)

        /// The frame as the stream carries it.
        var text: String {
            switch self {
            case .push(let frame), .batch(let frame): frame
            case .heartbeat: ": still here\n\n"
            case .gap: "event: gap\ndata: skipped\n\n"
            }
        }
    }

    private struct State: Sendable {
        var subscribers: [Int: AsyncStream<Frame>.Continuation] = [:]
        var nextID = 0
        var wake: CheckedContinuation<Bool, Never>?
        var stopped = false
    }

    private let store: any HeraldStore
    private let clock: any HeraldClock
    private let interval: Duration
    private let logger: Logger
    private let state = Mutex(State())
    private let streams = Gauge(label: "herald_console_live_streams")
    /// Pushes accepted up to this long before a poll are read again: a push committed late by
    /// another node (its acceptance time is when it was made, not when it committed) is not
    /// missed; the tracker drops the ones told already.
    static let overlap: Int64 = 5_000
    /// Polls' batches a slow console may fall behind (about 30 s) before the oldest are dropped:
    /// its memory stays bounded; it misses rows, never the stream.
    static let buffer = 30
    /// Pages of new pushes read per poll at most (500 each): past that many pushes a second the
    /// stream says it skipped some (`gap`) instead of falling ever further behind.
    static let pagesPerPoll = 10

    init(store: any HeraldStore, clock: any HeraldClock, interval: Duration, logger: Logger) {
        self.store = store
        self.clock = clock
        self.interval = interval
        self.logger = logger
    }

    /// How many consoles watch now.
    var watching: Int { state.withLock { $0.subscribers.count } }

    /// A stream of frames until the console goes or the node stops.
    func subscribe() -> AsyncStream<Frame> {
        let (stream, continuation) = AsyncStream<Frame>.makeStream(bufferingPolicy: .bufferingNewest(Self.buffer))
        let (id, wake, stopped) = state.withLock { state -> (Int, CheckedContinuation<Bool, Never>?, Bool) in
            let id = state.nextID
            state.nextID += 1
            guard !state.stopped else { return (id, nil, true) }
            state.subscribers[id] = continuation
            let wake = state.wake
            state.wake = nil
            return (id, wake, false)
        }
        if stopped {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            let open = state.withLock { state in
                state.subscribers[id] = nil
                return state.subscribers.count
            }
            streams.record(open)
        }
        streams.record(watching)
        wake?.resume(returning: true)
        return stream
    }

    public func run() async throws {
        // Stopped by the node's shutdown or by its task's cancellation (`herald serve` run in
        // process): either way the idle wait for a console ends, and the streams with it.
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await poll()
            } onGracefulShutdown: {
                self.stop()
            }
        } onCancel: {
            self.stop()
        }
    }

    private func stop() {
        let (subscribers, wake) = state.withLock { state in
            state.stopped = true
            defer {
                state.subscribers = [:]
                state.wake = nil
            }
            return (Array(state.subscribers.values), state.wake)
        }
        for subscriber in subscribers { subscriber.finish() }
        wake?.resume(returning: true)
    }

    /// The pushes accepted since `since`, newest first, at most `pagesPerPoll` pages; and
    /// whether that was all of them.
    private func accepted(since: Int64) async throws -> ([PushSummary], complete: Bool) {
        var pushes: [PushSummary] = []
        var after: PushCursor?
        for _ in 0..<Self.pagesPerPoll {
            let page = try await store.pushes(
                matching: PushQuery(since: since, after: after, limit: PushQuery.limits.upperBound)
            )
            pushes += page.pushes
            guard let next = page.next else { return (pushes, true) }
            after = next
        }
        return (pushes, false)
    }

    private func poll() async {
        var tracker = LiveFeedTracker()
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var since = clock.now() - Self.overlap
        var quiet = 0
        while !Task.isCancelled {
            // Idle while nobody watches: the feed costs nothing without a console.
            let waited =
                await withCheckedContinuation { continuation in
                    let ready = state.withLock { state -> Bool in
                        if state.stopped || !state.subscribers.isEmpty { return true }
                        state.wake = continuation
                        return false
                    }
                    if ready { continuation.resume(returning: false) }
                } as Bool
            if state.withLock({ $0.stopped }) { return }
            let now = clock.now()
            if waited {
                // A console arrived after a quiet spell: it starts from now (its page showed the
                // pushes before), not from the last push told to a console long gone.
                since = now - Self.overlap
            }
            var frames: [Frame] = []
            do {
                let (recent, complete) = try await accepted(since: since)
                var changed: [PushSummary] = []
                let watched = tracker.watched(now: now)
                // The watched pushes, read by id in slices the store takes at once.
                for start in stride(from: 0, to: watched.count, by: PushSummary.maximumLookup) {
                    let slice = Array(watched[start..<min(start + PushSummary.maximumLookup, watched.count)])
                    changed += try await store.pushSummaries(ids: slice)
                }
                frames = try tracker.observe(recent + changed, now: now).map { event in
                    Frame.push(
                        "event: push\ndata: " + String(decoding: try encoder.encode(event), as: UTF8.self) + "\n\n"
                    )
                }
                if !complete { frames.append(.gap) }
                since = max(since, (recent.map(\.createdAt).max() ?? now) - Self.overlap)
            } catch {
                logger.warning("the console's live stream cannot read the store", metadata: ["error": "\(error)"])
            }
            // A heartbeat after a quiet spell (or a spell of failed reads): a proxy keeps the
            // stream open, and a console that went is noticed by the write that fails.
            quiet = frames.isEmpty ? quiet + 1 : 0
            if quiet >= 15 {
                frames.append(.heartbeat)
                quiet = 0
            }
            // One write a poll for each console, whatever the number of pushes it tells: a
            // console costs the node a write a second, not one per push.
            if !frames.isEmpty {
                let batch = Frame.batch(frames.map(\.text).joined())
                let subscribers = state.withLock { Array($0.subscribers.values) }
                for subscriber in subscribers { subscriber.yield(batch) }
            }
            // Real time between polls whatever the node's clock: the store is read at a pace, not
            // at a time a test sets (a test clock that stands still must not stop the stream).
            try? await Task.sleep(for: interval)
        }
    }
}
