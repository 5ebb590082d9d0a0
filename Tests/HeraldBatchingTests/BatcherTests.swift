import HeraldBatching
import Synchronization
import Testing

/// The batching rule as data (`Rules.take`), and the queue driven by items that wait on a gate:
/// no store, no clock, no sleeps.
@Suite("Batcher")
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
}
