import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldDispatch

/// The dispatcher's finished outcomes, batched (`Batcher.enqueue`, `run`) so several loops'
/// batches share a store write; the batching rule itself is tested in BatcherTests.
@Suite("Finished pushes' outcomes recorded together")
struct OutcomeLingerTests {
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
