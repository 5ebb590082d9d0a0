import HeraldBatching
import Synchronization
import Testing

/// The batching rule as data (`Rules.take`), and the queue driven by items that wait on a gate:
/// no store, no clock, no sleeps.
@Suite("Batcher", .timeLimit(.minutes(1)))
struct BatcherTests {
    struct TakeCase: Sendable, CustomStringConvertible {
        var name: String
        var waiting: [String]
        var rules: Batcher<String, Int>.Rules
        var taken: [Int]
        var description: String { name }
    }

    /// Items are "key:weight"; an empty key is none.
    static func keyed(maxItems: Int, maxWeight: Int = .max) -> Batcher<String, Int>.Rules {
        .init(
            maxItems: maxItems,
            maxWeight: maxWeight,
            weight: { Int($0.split(separator: ":", omittingEmptySubsequences: false).last ?? "1") ?? 1 },
            keys: { item in
                let key = item.split(separator: ":", omittingEmptySubsequences: false).first.map(String.init) ?? ""
                return key.isEmpty ? [] : [key]
            }
        )
    }

    static let takeCases: [TakeCase] = [
        TakeCase(name: "all that fit", waiting: ["a:1", "b:1", "c:1"], rules: keyed(maxItems: 8), taken: [0, 1, 2]),
        TakeCase(name: "at most maxItems", waiting: ["a:1", "b:1", "c:1"], rules: keyed(maxItems: 2), taken: [0, 1]),
        TakeCase(
            name: "a shared key waits for the next batch; later items still go",
            waiting: ["a:1", "a:1", "b:1"],
            rules: keyed(maxItems: 8),
            taken: [0, 2]
        ),
        TakeCase(name: "no key is never shared", waiting: [":1", ":1"], rules: keyed(maxItems: 8), taken: [0, 1]),
        TakeCase(
            name: "weight: what fits goes, a heavy one waits",
            waiting: ["a:2", "b:3", "c:1"],
            rules: keyed(maxItems: 8, maxWeight: 4),
            taken: [0, 2]
        ),
        TakeCase(
            name: "the first goes even when heavier than a batch",
            waiting: ["a:9", "b:1"],
            rules: keyed(maxItems: 8, maxWeight: 4),
            taken: [0]
        ),
        TakeCase(name: "nothing waiting", waiting: [], rules: keyed(maxItems: 8), taken: []),
    ]

    @Test("which waiting items go in the next batch", arguments: takeCases)
    func take(_ test: TakeCase) {
        #expect(test.rules.take(from: test.waiting) == test.taken)
    }

    /// Records every batch a handler was given; holds the first until `open()`.
    final class Recorder: Sendable {
        let batches = Mutex<[[Int]]>([])
        let gate = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let held = Mutex<Bool>(true)

        func handle(_ items: [Int]) async -> [Result<Int, any Error>] {
            let first = batches.withLock { batches in
                batches.append(items)
                return batches.count == 1
            }
            if first, held.withLock({ $0 }) {
                await withCheckedContinuation { continuation in gate.withLock { $0 = continuation } }
            }
            return items.map { .success($0 * 10) }
        }

        /// Whether the first batch is being handled (and so waits on the gate).
        var firstIsWaiting: Bool { gate.withLock { $0 != nil } }

        func open() {
            held.withLock { $0 = false }
            gate.withLock { gate in
                gate?.resume()
                gate = nil
            }
        }
    }

    @Test("a lone item goes at once; what arrives while a batch runs shares the next")
    func burstsShare() async throws {
        let batcher = Batcher<Int, Int>(rules: .init(maxItems: 64))
        let recorder = Recorder()
        let handle: Batcher<Int, Int>.Handle = { await recorder.handle($0) }
        try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask { try await batcher.submit(1, handle: handle) }
            while !recorder.firstIsWaiting { await Task.yield() }
            for item in 2...5 { group.addTask { try await batcher.submit(item, handle: handle) } }
            // The four wait for the running batch: none is handled until it ends.
            for _ in 0..<100 { await Task.yield() }
            #expect(recorder.batches.withLock { $0 } == [[1]])
            recorder.open()
            var outcomes: [Int] = []
            for try await outcome in group { outcomes.append(outcome) }
            #expect(outcomes.sorted() == [10, 20, 30, 40, 50])
        }
        let batches = recorder.batches.withLock { $0 }
        #expect(batches.first == [1])
        #expect(batches.dropFirst().flatMap { $0 }.sorted() == [2, 3, 4, 5])
        #expect(batches.count <= 5)
    }

    struct Refused: Error, Equatable {
        var item: Int
    }

    @Test("each alone on failure: one bad item fails alone, the others of its batch succeed")
    func eachAlone() async {
        let calls = Mutex<[[Int]]>([])
        let handle = Batcher<Int, Int>.eachAloneOnFailure { items in
            calls.withLock { $0.append(items) }
            if items.contains(3) { throw Refused(item: 3) }
            return items.map { $0 + 100 }
        }
        let results = await handle([1, 3, 5])
        #expect(results.count == 3)
        #expect((try? results[0].get()) == 101 && (try? results[2].get()) == 105)
        #expect(throws: Refused(item: 3)) { try results[1].get() }
        #expect(calls.withLock { $0 } == [[1, 3, 5], [1], [3], [5]])
    }

    @Test("all or nothing: a failure fails every item; a short answer is an error, not a hang")
    func allOrNothing() async {
        let failing = Batcher<Int, Int>.allOrNothing { _ in throw Refused(item: 0) }
        let failed = await failing([1, 2])
        #expect(failed.count == 2)
        for result in failed { #expect(throws: Refused(item: 0)) { try result.get() } }

        let short = Batcher<Int, Int>.allOrNothing { _ in [1] }
        for result in await short([1, 2]) { #expect(throws: BatchError.missingOutcome) { try result.get() } }

        let batcher = Batcher<Int, Int>(rules: .init(maxItems: 4))
        await #expect(throws: BatchError.missingOutcome) {
            try await batcher.submit(7) { _ in [] }
        }
    }

    // MARK: Enqueued items, done by `run`

    /// What a run's work was given, batch by batch; holds each batch while its gate is closed.
    final class Work: Sendable {
        let batches = Mutex<[[[Int]]]>([])
        let closed = Mutex<Bool>(false)
        let held = Mutex<[CheckedContinuation<Void, Never>]>([])

        func handle(_ items: [[Int]]) async {
            batches.withLock { $0.append(items) }
            await withCheckedContinuation { continuation in
                let hold = closed.withLock { $0 }
                if hold { held.withLock { $0.append(continuation) } } else { continuation.resume() }
            }
        }

        var all: [[[Int]]] { batches.withLock { $0 } }

        /// Returns once `count` batches were given.
        func wait(for count: Int) async {
            while all.count < count { await Task.yield() }
        }

        func close() { closed.withLock { $0 = true } }

        func open() {
            closed.withLock { $0 = false }
            let waiting = held.withLock { held in
                defer { held = [] }
                return held
            }
            for continuation in waiting { continuation.resume() }
        }
    }

    /// Items are arrays whose weight is their count (a loop's outcomes).
    static func lingering(_ linger: Duration, maxPending: Int = 100) -> Batcher<[Int], Void> {
        Batcher(rules: .init(maxItems: .max, weight: { $0.count }, linger: linger, maxPending: maxPending))
    }

    @Test("items enqueued while a batch lingers go in it, in order; finish does them at once and ends the run")
    func lingerGathers() async {
        let batcher = Self.lingering(.seconds(3_600))
        let work = Work()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await batcher.run { await work.handle($0) } }
            // Each returns at once: were it to wait for its batch, the test would wait an hour.
            await batcher.enqueue([1, 2])
            await batcher.enqueue([3])
            await batcher.enqueue([4])
            #expect(work.all.isEmpty && batcher.pending == 4)
            batcher.finish()
        }
        #expect(work.all == [[[1, 2], [3], [4]]])
        #expect(batcher.pending == 0)
        // Nothing waits: the next run, told to finish before it starts, does nothing.
        batcher.finish()
        await batcher.run { await work.handle($0) }
        #expect(work.all.count == 1)
    }

    @Test("a batch goes once its linger ends, without finish; the next item starts a new one")
    func lingerEnds() async {
        let batcher = Self.lingering(.milliseconds(5))
        let work = Work()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await batcher.run { await work.handle($0) } }
            await batcher.enqueue([1])
            await work.wait(for: 1)
            #expect(work.all == [[[1]]])
            await batcher.enqueue([2])
            await work.wait(for: 2)
            #expect(work.all.last == [[2]])
            batcher.finish()
        }
    }

    @Test("at maxPending the batch goes without lingering, and enqueue waits until the work is done")
    func fullHoldsCallers() async {
        let batcher = Self.lingering(.seconds(3_600), maxPending: 3)
        let work = Work()
        work.close()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await batcher.run { await work.handle($0) } }
            await batcher.enqueue([1, 2])
            let returned = Mutex(false)
            group.addTask {
                await batcher.enqueue([3, 4])
                returned.withLock { $0 = true }
            }
            // Four reach the limit of three: the batch goes without the hour's linger…
            await work.wait(for: 1)
            #expect(work.all == [[[1, 2], [3, 4]]])
            // …and the second enqueue waits until it is done.
            for _ in 0..<100 { await Task.yield() }
            #expect(!returned.withLock { $0 })
            work.open()
            while !returned.withLock({ $0 }) { await Task.yield() }
            #expect(batcher.pending == 0)
            batcher.finish()
        }
    }

    @Test("the rules group the run's batches: at most maxItems each")
    func runTakesByTheRules() async {
        let batcher = Batcher<[Int], Void>(rules: .init(maxItems: 2, weight: { $0.count }))
        let work = Work()
        for item in 1...5 { await batcher.enqueue([item]) }
        batcher.finish()
        await batcher.run { await work.handle($0) }
        #expect(work.all == [[[1], [2]], [[3], [4]], [[5]]])
    }

    @Test("cancelling the run's task ends its lingers, not the run: what is enqueued is still done")
    func cancelledRunStillWorks() async {
        let batcher = Self.lingering(.seconds(3_600))
        let work = Work()
        let run = Task { await batcher.run { await work.handle($0) } }
        run.cancel()
        await batcher.enqueue([1])
        await work.wait(for: 1)
        await batcher.enqueue([2])
        await work.wait(for: 2)
        #expect(work.all == [[[1]], [[2]]])
        batcher.finish()
        await run.value
    }
}
