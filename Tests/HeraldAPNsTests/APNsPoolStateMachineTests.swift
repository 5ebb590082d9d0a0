import HeraldPush
import Testing

@testable import HeraldAPNs

/// Connections are named by strings: the machine only holds and hands them back.
private typealias Machine = APNsPoolStateMachine<String>

/// Two slots, at most 100 streams each; the backoff's ceiling drawn (100 ms doubling to 30 s).
private func machine(connections: Int = 2) -> Machine {
    Machine(
        connections: connections,
        maximumStreamsPerConnection: 100,
        backoff: Backoff(base: .milliseconds(100), maximum: .seconds(30)),
        draw: { backoff, attempt in backoff.ceiling(attempt: attempt) }
    )
}

extension APNsPoolStateMachine where Connection == String {
    /// Connects `slot` at once and marks `connection` ready; the actions of the latter.
    fileprivate mutating func ready(_ slot: Int, _ connection: String) -> [Action] {
        guard case .open(_, let generation) = handle(.connect(slot: slot)).last else { return [] }
        return handle(.opened(slot: slot, generation: generation, connection))
    }

    /// Fails the slot's attempts `times` times from its start; the last failure's actions.
    fileprivate mutating func fail(_ slot: Int, times: Int, error: String = "refused") -> [Action] {
        var actions = handle(.connect(slot: slot))
        for _ in 0..<times {
            if case .backOff = actions.last { actions = handle(.backedOff(slot: slot)) }
            actions = handle(.openFailed(slot: slot, error: error))
        }
        return actions
    }
}

/// The APNs pool's slots, event by event: when each connects, waits, reconnects, and when the
/// requests waiting for a stream are handed one or failed.
@Suite("APNs pool lifecycle", .timeLimit(.minutes(1)))
struct APNsPoolStateMachineTests {
    @Test("each slot opens at once; a connection made is ready with one stream and ends its loop")
    func connects() {
        var pool = machine()
        #expect(pool.handle(.connect(slot: 0)) == [.open(slot: 0, generation: 1)])
        #expect(pool.take() == nil, "nothing ready yet")
        #expect(
            pool.handle(.opened(slot: 0, generation: 1, "c0"))
                == [.dispatchWaiters, .becameReady(slot: 0), .stopConnecting(slot: 0)]
        )
        let lease = pool.take()
        #expect(lease?.connection == "c0" && lease?.slot == 0 && lease?.generation == 1)
        #expect(pool.take() == nil, "one stream until the server's SETTINGS")
        #expect(pool.inFlight == 1)
        if let lease { pool.release(lease) }
        #expect(pool.inFlight == 0)
    }

    @Test("the server's stream limit, capped, hands streams to the waiters; an old connection's is ignored")
    func streamLimit() {
        var pool = machine()
        _ = pool.ready(0, "c0")
        #expect(pool.handle(.connection(slot: 0, generation: 1, .streamLimit(500))) == [.dispatchWaiters])
        var leases: [Machine.Lease] = []
        while let lease = pool.take() { leases.append(lease) }
        #expect(leases.count == 100)
        #expect(pool.handle(.connection(slot: 0, generation: 0, .streamLimit(5))) == [])
        #expect(pool.handle(.connection(slot: 0, generation: 1, .streamLimit(0))) == [.dispatchWaiters])
    }

    @Test("leases go to the ready connection with the most free streams")
    func leastLoaded() {
        var pool = machine()
        _ = pool.ready(0, "c0")
        _ = pool.ready(1, "c1")
        _ = pool.handle(.connection(slot: 0, generation: 1, .streamLimit(2)))
        _ = pool.handle(.connection(slot: 1, generation: 1, .streamLimit(3)))
        #expect(
            (0..<5).compactMap { _ in pool.take()?.connection }.sorted() == ["c0", "c0", "c1", "c1", "c1"]
        )
        #expect(pool.take() == nil)
    }

    @Test("a failed attempt counts, is logged, and the next waits out a backoff from twice the base")
    func failureBacksOff() {
        var pool = machine()
        #expect(pool.handle(.connect(slot: 0)) == [.open(slot: 0, generation: 1)])
        #expect(
            pool.handle(.openFailed(slot: 0, error: "refused"))
                == [
                    .connectFailed(slot: 0, failures: 1, error: "refused"),
                    .backOff(slot: 0, delay: .milliseconds(200)),
                ]
        )
        #expect(pool.isBackingOff)
        #expect(pool.handle(.backedOff(slot: 0)) == [.open(slot: 0, generation: 2)])
        #expect(!pool.isBackingOff)
        #expect(
            pool.handle(.openFailed(slot: 0, error: "refused"))
                == [
                    .connectFailed(slot: 0, failures: 2, error: "refused"),
                    .backOff(slot: 0, delay: .milliseconds(400)),
                ]
        )
        #expect(pool.unreachable == nil, "two failures, and the other slot has none")
    }

    @Test(
        "the backoff doubles up to the maximum",
        arguments: [(1, 200), (2, 400), (5, 3_200), (8, 25_600), (9, 30_000), (40, 30_000)]
    )
    func backoffCeiling(failures: Int, milliseconds: Int) {
        var pool = machine()
        let actions = pool.fail(0, times: failures)
        #expect(actions.last == .backOff(slot: 0, delay: .milliseconds(milliseconds)))
    }

    @Test("the third failure in a row with nothing ready fails the waiters; with a slot ready it does not")
    func thirdFailure() {
        var pool = machine()
        #expect(!pool.fail(0, times: 2).contains(.failWaiters(.connectFailed("refused"))))
        #expect(pool.handle(.backedOff(slot: 0)) == [.open(slot: 0, generation: 3)])
        #expect(
            pool.handle(.openFailed(slot: 0, error: "refused"))
                == [
                    .failWaiters(.connectFailed("refused")),
                    .connectFailed(slot: 0, failures: 3, error: "refused"),
                    .backOff(slot: 0, delay: .milliseconds(800)),
                ]
        )
        var other = machine()
        _ = other.ready(1, "c1")
        #expect(!other.fail(0, times: 3).contains(.failWaiters(.connectFailed("refused"))))
        #expect(other.unreachable == nil)
    }

    @Test("every slot failed three times: unreachable; a waiting request ends the backoffs (a kick)")
    func kick() {
        var pool = machine()
        _ = pool.fail(0, times: 3)
        _ = pool.fail(1, times: 3)
        #expect(pool.unreachable == "refused")
        #expect(pool.isBackingOff)
        #expect(pool.handle(.kick) == [.wake(slot: 0), .wake(slot: 1)])
        #expect(pool.isKicked(slot: 0) && pool.isKicked(slot: 1))
        // The wait ends at once; the attempt goes, and the kick is spent.
        #expect(pool.handle(.backedOff(slot: 0)) == [.open(slot: 0, generation: 4)])
        #expect(!pool.isKicked(slot: 0))
        // No slot backing off: nothing to kick (the pool refuses the request).
        _ = pool.handle(.backedOff(slot: 1))
        #expect(pool.handle(.kick) == [])
    }

    @Test("a connection ready again ends the other slots' backoffs and clears the error")
    func recoveryWakesTheOthers() {
        var pool = machine()
        _ = pool.fail(1, times: 2)
        _ = pool.fail(0, times: 1)
        #expect(pool.handle(.backedOff(slot: 0)) == [.open(slot: 0, generation: 2)])
        #expect(
            pool.handle(.opened(slot: 0, generation: 2, "c0"))
                == [.dispatchWaiters, .wake(slot: 1), .becameReady(slot: 0), .stopConnecting(slot: 0)]
        )
        #expect(pool.lastConnectError == nil && pool.slots[0].failures == 0)
        // Slot 1's next attempt after the wake.
        #expect(pool.handle(.backedOff(slot: 1)) == [.open(slot: 1, generation: 3)])
    }

    @Test("GOAWAY drains a ready connection and starts its replacement; a close does too")
    func goingAway() {
        var pool = machine()
        _ = pool.ready(0, "c0")
        #expect(pool.handle(.connection(slot: 0, generation: 1, .goingAway)) == [.reconnect(slot: 0)])
        #expect(pool.take() == nil, "a draining connection takes nothing new")
        // Its close before the replacement began: one is on its way already.
        #expect(pool.handle(.connection(slot: 0, generation: 1, .closed)) == [])
        #expect(pool.handle(.connect(slot: 0)) == [.open(slot: 0, generation: 2)])
        // The old connection's events are ignored now.
        #expect(pool.handle(.connection(slot: 0, generation: 1, .closed)) == [])
        #expect(pool.ready(1, "c1").contains(.stopConnecting(slot: 1)))
        #expect(pool.handle(.connection(slot: 1, generation: 1, .closed)) == [.reconnect(slot: 1)])
    }

    @Test("a connection ended before it was ready counts a failure and is replaced after a backoff")
    func endedWhileConnecting() {
        var pool = machine()
        #expect(pool.handle(.connect(slot: 0)) == [.open(slot: 0, generation: 1)])
        #expect(pool.handle(.connection(slot: 0, generation: 1, .goingAway)) == [])
        #expect(
            pool.handle(.opened(slot: 0, generation: 1, "c0"))
                == [.close("c0"), .endedBeforeReady(slot: 0), .backOff(slot: 0, delay: .milliseconds(200))]
        )
        #expect(pool.handle(.backedOff(slot: 0)) == [.open(slot: 0, generation: 2)])
        #expect(pool.handle(.opened(slot: 0, generation: 2, "c0b")).contains(.becameReady(slot: 0)))
    }

    @Test("a connection made for an older attempt, or after shutdown, is closed and the loop ends")
    func stale() {
        var pool = machine()
        _ = pool.handle(.connect(slot: 0))
        #expect(pool.handle(.opened(slot: 0, generation: 0, "old")) == [.close("old"), .stopConnecting(slot: 0)])
        _ = pool.handle(.shutdown)
        #expect(pool.handle(.opened(slot: 0, generation: 1, "late")) == [.close("late"), .stopConnecting(slot: 0)])
    }

    @Test("shutdown fails the waiters, closes the ready connections, and stops every connect loop")
    func shutdown() {
        var pool = machine()
        _ = pool.ready(0, "c0")
        _ = pool.fail(1, times: 1)
        #expect(pool.handle(.shutdown) == [.failWaiters(.shutdown), .close("c0"), .wake(slot: 1)])
        #expect(pool.isShutdown && pool.take() == nil)
        #expect(pool.handle(.backedOff(slot: 1)) == [.stopConnecting(slot: 1)])
        #expect(pool.handle(.connect(slot: 0)) == [.stopConnecting(slot: 0)])
        #expect(pool.handle(.openFailed(slot: 1, error: "refused")).last == .stopConnecting(slot: 1))
        #expect(pool.handle(.connection(slot: 0, generation: 1, .closed)) == [])
    }

    @Test("a lease of an older connection given back is not counted against the new one")
    func oldRelease() {
        var pool = machine(connections: 1)
        _ = pool.ready(0, "c0")
        let lease = pool.take()
        _ = pool.handle(.connection(slot: 0, generation: 1, .closed))
        _ = pool.ready(0, "c0b")
        if let lease { pool.release(lease) }
        #expect(pool.inFlight == 0)
        #expect(pool.take()?.connection == "c0b")
    }
}

extension APNsPoolStateMachine.Lease: Equatable where Connection: Equatable {
    static func == (a: Self, b: Self) -> Bool {
        a.slot == b.slot && a.generation == b.generation && a.connection == b.connection
    }
}
