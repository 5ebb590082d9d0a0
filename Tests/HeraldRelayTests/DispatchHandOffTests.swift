import Foundation
import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldDispatch

/// The pushes a node's ingests hand to its own dispatcher in memory: the bounded queue's rules,
/// and the dispatcher sending them with no claim statement.
@Suite(.timeLimit(.minutes(2)))
struct DispatchHandOffTests {
    static func claimed(_ id: String, kind: OutboxKind = .message, at time: Int64) -> ClaimedPush {
        ClaimedPush(entry: StoreFixtures.push(id, device: "d1", kind: kind, at: time), deviceToken: "tok-1")
    }

    @Test("the queue keeps nothing before it opens or after it closes, and never more than its capacity")
    func bounded() {
        var queue = HandOffQueue(capacity: 4)
        let beforeOpen = queue.reserve(2, sending: 0)
        #expect(beforeOpen == 0, "closed until the dispatcher released its earlier claims")
        queue.open()
        let first = queue.reserve(3, sending: 0)
        let second = queue.reserve(3, sending: 0)
        #expect(first == 3 && second == 1)
        #expect(queue.room(sending: 0) == 0)
        queue.release(1)
        #expect(queue.room(sending: 0) == 1)
        let kept = queue.fulfil(3, with: [Self.claimed("a", at: 1), Self.claimed("b", at: 2)], leaseUntil: 100)
        #expect(kept)
        #expect(queue.reserved == 0 && queue.waiting.count == 2 && queue.room(sending: 0) == 2)
        #expect(queue.room(sending: 1) == 1 && queue.room(sending: 3) == 0, "pushes being sent count too")
        let left = queue.close()
        #expect(left.map(\.entry.pushID) == ["a", "b"])
        let afterClose = queue.reserve(1, sending: 0)
        #expect(afterClose == 0)
        let late = queue.fulfil(0, with: [Self.claimed("c", at: 3)], leaseUntil: 100)
        #expect(!late, "closed: the caller puts it back")
        #expect(queue.isEmpty)
    }

    @Test("pushes are taken calls first, then the longest waiting, a batch at a time; late ones are set apart")
    func order() {
        var queue = HandOffQueue(capacity: 10)
        queue.open()
        _ = queue.reserve(3, sending: 0)
        let messages = queue.fulfil(
            3,
            with: [Self.claimed("m2", at: 20), Self.claimed("m1", at: 10)],
            leaseUntil: 1_000
        )
        _ = queue.reserve(2, sending: 0)
        let call = queue.fulfil(2, with: [Self.claimed("c1", kind: .call, at: 30)], leaseUntil: 1_000)
        let old = queue.fulfil(0, with: [Self.claimed("old", at: 5)], leaseUntil: 400)
        #expect(messages && call && old)
        let first = queue.take(2, freshUntil: 500)
        #expect(first.pushes.map(\.entry.pushID) == ["c1"])
        #expect(first.stale.map(\.entry.pushID) == ["old"], "its lease ends before the fresh limit")
        let second = queue.take(5, freshUntil: 500)
        #expect(second.pushes.map(\.entry.pushID) == ["m1", "m2"])
        #expect(second.stale.isEmpty && queue.isEmpty)
        let none = queue.take(5, freshUntil: 500)
        #expect(none.pushes.isEmpty)
    }
}

extension DispatchHandOffTests {
    /// Reserves `pushes` on the rig's dispatcher, writes them as an ingest with that claim, and
    /// hands them over: what a node's ingest does.
    static func ingest(_ pushes: [OutboxEntry], on rig: Rig) async throws -> IngestClaim? {
        let reserved = rig.dispatcher.reserve(pushes)
        var ingest = StoreFixtures.ingest(pushes)
        ingest.claim = reserved
        #expect(try await rig.sqlite.accept(ingest) == .accepted)
        if let reserved {
            rig.dispatcher.handOff(
                pushes.map { ClaimedPush(entry: $0, deviceToken: $0.usesVoIPToken ? "voip-1" : "tok-1") },
                reserved: reserved
            )
        }
        return reserved
    }

    @Test("pushes handed over are sent with no claim statement, calls first, each as one attempt")
    func sentWithoutClaims() async throws {
        try await Rig.with(.inOrder([]), pushes: []) { (rig: Rig) async throws in
            // The first pass claims what was queued before the start; the hand-off is open by then.
            await rig.store.claimsMade.wait(forCount: 1)
            let claimsBefore = rig.store.claimsMade.all.count
            let start = DispatcherTests.start
            let pushes = [
                DispatcherTests.push("m1", at: start - 2), DispatcherTests.push("m2", at: start - 1),
                DispatcherTests.push("c1", kind: .call, at: start),
            ]
            let reserved = try #require(try await Self.ingest(pushes, on: rig))
            #expect(reserved.pushIDs == ["m1", "m2", "c1"] && reserved.owner == "local")
            let completions = await rig.store.waitForCompletions(3)
            #expect(completions.allSatisfy { $0.disposition == .finish(.delivered) })
            #expect(rig.sender.calls.map(\.pushIDs) == [["c1", "m1", "m2"]])
            #expect(rig.store.claimsMade.all.count == claimsBefore, "no claim statement")
            for id in ["m1", "m2", "c1"] {
                let entry = try #require(try await rig.sqlite.push(id: id))
                #expect(entry.state == .delivered && entry.attempts == 1)
            }
        }
    }

    @Test("beyond its room, and for pushes due later, an ingest queues them for a claim as before")
    func overflowGoesThroughClaims() async throws {
        try await Rig.with(.inOrder([]), pushes: [], handOffCapacity: 2) { (rig: Rig) async throws in
            await rig.store.claimsMade.wait(forCount: 1)
            let start = DispatcherTests.start
            var later = DispatcherTests.push("later", at: start)
            later.nextAttemptAt = start + 60_000
            let pushes = [
                DispatcherTests.push("p1", at: start), later, DispatcherTests.push("p2", at: start),
                DispatcherTests.push("p3", at: start),
            ]
            let reserved = try #require(try await Self.ingest(pushes, on: rig))
            #expect(reserved.pushIDs == ["p1", "p2"], "room for two; the deferred push is never kept")
            #expect(try await rig.sqlite.push(id: "p3")?.state == .queued)
            #expect(try await rig.sqlite.push(id: "later")?.state == .queued)
            // What the relay does for a queued push: wake the dispatcher to claim.
            rig.dispatcher.wake()
            let completions = await rig.store.waitForCompletions(3)
            #expect(Set(completions.map(\.pushID)) == ["p1", "p2", "p3"])
            #expect(try await rig.sqlite.push(id: "p3")?.attempts == 1)
            #expect(try await rig.sqlite.push(id: "later")?.state == .queued)
        }
    }

    @Test("pushes handed over after the dispatcher stopped go back to the queue, their attempt not counted")
    func afterShutdownPutBack() async throws {
        try await Rig.with(.inOrder([]), pushes: []) { (rig: Rig) async throws in
            await rig.store.claimsMade.wait(forCount: 1)
            let reserved = rig.dispatcher.reserve([DispatcherTests.push("p", at: DispatcherTests.start)])
            var ingest = StoreFixtures.ingest([DispatcherTests.push("p", at: DispatcherTests.start)])
            ingest.claim = reserved
            #expect(try await rig.sqlite.accept(ingest) == .accepted)
            await rig.group.triggerGracefulShutdown()
            try await rig.run.value
            rig.dispatcher.handOff(
                [ClaimedPush(entry: DispatcherTests.push("p", at: DispatcherTests.start), deviceToken: "tok-1")],
                reserved: try #require(reserved)
            )
            let completions = await rig.store.waitForCompletions(1)
            #expect(completions.map(\.pushID) == ["p"])
            guard case .requeue = completions.first?.disposition else {
                Issue.record("not put back: \(completions)")
                return
            }
            let entry = try #require(try await rig.sqlite.push(id: "p"))
            #expect(entry.state == .queued && entry.attempts == 0)
            #expect(rig.sender.calls.isEmpty)
            #expect(rig.dispatcher.reserve([DispatcherTests.push("q", at: DispatcherTests.start)]) == nil)
        }
    }
}
