import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldRelay

@Suite("Finished pushes' outcomes recorded together")
struct OutcomeRecorderTests {
    static func delivered(_ ids: String...) -> [PushCompletion] {
        ids.map { PushCompletion(pushID: $0, disposition: .finish(.delivered), reason: nil, deadToken: nil) }
    }

    @Test("batches recorded while the first lingers go in one write, each with its own time")
    func batchesShareAWrite() async throws {
        let writes = Recorded<[CompletionBatch]>()
        let recorder = OutcomeRecorder(linger: .seconds(3_600), limit: 100) { writes.append(contentsOf: [$0]) }
        // Each returns at once: were it to wait for its write, the test would wait an hour.
        await recorder.record(Self.delivered("a", "b"), now: 10)
        await recorder.record(Self.delivered("c"), now: 11)
        await recorder.record(Self.delivered("d"), now: 12)
        #expect(writes.all.isEmpty)
        await recorder.flush()
        #expect(
            writes.all == [
                [
                    CompletionBatch(completions: Self.delivered("a", "b"), now: 10),
                    CompletionBatch(completions: Self.delivered("c"), now: 11),
                    CompletionBatch(completions: Self.delivered("d"), now: 12),
                ]
            ]
        )
        // Nothing waits now: a second flush writes nothing.
        await recorder.flush()
        #expect(writes.all.count == 1)
    }

    @Test("outcomes are written once the linger ends, without a flush")
    func lingerEnds() async throws {
        let writes = Recorded<[CompletionBatch]>()
        let recorder = OutcomeRecorder(linger: .milliseconds(5), limit: 100) { writes.append(contentsOf: [$0]) }
        await recorder.record(Self.delivered("a"), now: 1)
        let written = await writes.wait(forCount: 1)
        #expect(written == [[CompletionBatch(completions: Self.delivered("a"), now: 1)]])
        // The next record starts a new linger and a new write.
        await recorder.record(Self.delivered("b"), now: 2)
        #expect(await writes.wait(forCount: 2).last == [CompletionBatch(completions: Self.delivered("b"), now: 2)])
    }

    @Test("a recorder holding its limit makes the next record wait for the write, which it starts at once")
    func fullRecorderHoldsItsCallers() async throws {
        let writes = Recorded<[CompletionBatch]>()
        let gate = AsyncStream<Void>.makeStream()
        let recorder = OutcomeRecorder(linger: .seconds(3_600), limit: 3) { batches in
            writes.append(contentsOf: [batches])
            for await _ in gate.stream { break }
        }
        await recorder.record(Self.delivered("a", "b"), now: 1)
        let returned = Recorded<Int>()
        let second = Task {
            await recorder.record(Self.delivered("c", "d"), now: 2)
            returned.append(contentsOf: [2])
        }
        // Four outcomes reach the limit of three: the write starts without the hour's linger…
        #expect(await writes.wait(forCount: 1).first?.count == 2)
        // …and the second record waits until the store took them.
        #expect(returned.all.isEmpty)
        gate.continuation.yield()
        await second.value
        #expect(returned.all == [2])
        await recorder.flush()
    }

    @Test("a dispatcher's finished batches wait for the linger and are recorded at its graceful stop")
    func dispatcherRecordsAtItsStop() async throws {
        try await Rig.with(
            .inOrder([]),
            batchSize: 3,
            pushes: [DispatcherTests.push("p0", at: DispatcherTests.start - 10)],
            outcomeLinger: .seconds(3_600)
        ) { (rig: Rig) async throws in
            #expect(await rig.sender.waitForCalls(1).map(\.pushIDs) == [["p0"]])
            // A second batch, later: both wait for the hour's linger (two outcomes, below the
            // limit of one loop's batch of three).
            let later = DispatcherTests.push("p1", at: DispatcherTests.start - 5)
            #expect(try await rig.sqlite.accept(StoreFixtures.ingest([later])) == .accepted)
            rig.dispatcher.wake()
            #expect(await rig.sender.waitForCalls(2).map(\.pushIDs) == [["p0"], ["p1"]])
            #expect(try await rig.sqlite.outboxCounts()[.sending] == 2)
            #expect(rig.store.batchWrites.all.isEmpty)
            await rig.group.triggerGracefulShutdown()
            try await rig.run.value
            // The stop wrote them, in one write of the two batches, before it returned.
            #expect(rig.store.batchWrites.all == [2])
            for id in ["p0", "p1"] {
                #expect(try await rig.sqlite.push(id: id)?.state == .delivered, "\(id)")
            }
        }
    }
}
