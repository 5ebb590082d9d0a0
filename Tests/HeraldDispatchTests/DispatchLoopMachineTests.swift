import HeraldDispatch
import Testing

/// One dispatcher loop's decisions as a table: each case is a run of events and the actions
/// each one answers. No store, no sender, no clock.
@Suite("Dispatch loop machine")
struct DispatchLoopMachineTests {
    typealias Machine = DispatchLoopMachine
    typealias Event = Machine.Event
    typealias Action = Machine.Action

    /// Batches of 8, a lease of 60 s (half: 30 s), an idle poll of 1 s.
    static let configuration = Machine.Configuration(batchSize: 8, lease: 60_000, idlePoll: 1_000)

    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var steps: [(Event, [Action])]
        var description: String { name }
    }

    static func ready(
        _ now: Int64,
        wanted: Bool = false,
        held: Bool = false,
        stopping: Bool = false
    ) -> Event {
        .ready(now: now, claimWanted: wanted, outcomesHeld: held, stopping: stopping)
    }

    static let cases: [Case] = [
        Case(
            name: "the first pass claims a whole batch, sends it and learns when to claim next",
            steps: [
                (ready(1_000), [.takeHandedOver(limit: 4, freshUntil: 31_000)]),
                (.tookHandedOver(fresh: 0, stale: 0), [.claim(limit: 8, at: 1_000)]),
                (.claimed(count: 3, full: false), [.findNextDue]),
                (.nextDue(in: 400), [.send]),
                (.sent, [.nextPass]),
                // Before the next due time, and nothing asked for: hand-offs only, then sleep.
                (ready(1_100), [.takeHandedOver(limit: 8, freshUntil: 31_100)]),
                (.tookHandedOver(fresh: 0, stale: 0), [.sleep(until: 1_400)]),
                (.woke(signalled: true), [.nextPass]),
                // Its time came: it claims.
                (ready(1_400), [.takeHandedOver(limit: 4, freshUntil: 31_400)]),
            ]
        ),
        Case(
            name: "a wake claims before the next due time",
            steps: [
                (ready(0), [.takeHandedOver(limit: 4, freshUntil: 30_000)]),
                (.tookHandedOver(fresh: 0, stale: 0), [.claim(limit: 8, at: 0)]),
                (.claimed(count: 0, full: false), [.findNextDue]),
                (.nextDue(in: nil), [.sleep(until: 1_000)]),
                (.woke(signalled: true), [.nextPass]),
                (ready(10, wanted: true), [.takeHandedOver(limit: 4, freshUntil: 30_010)]),
                (.tookHandedOver(fresh: 0, stale: 0), [.claim(limit: 8, at: 10)]),
            ]
        ),
        Case(
            name: "a sleep that runs out claims, whatever the clock says",
            steps: [
                (ready(0), [.takeHandedOver(limit: 4, freshUntil: 30_000)]),
                (.tookHandedOver(fresh: 0, stale: 0), [.claim(limit: 8, at: 0)]),
                (.claimed(count: 0, full: false), [.findNextDue]),
                (.nextDue(in: 500), [.sleep(until: 500)]),
                (.woke(signalled: false), [.nextPass]),
                // A test's clock stood still: the poll ran out all the same.
                (ready(0), [.takeHandedOver(limit: 4, freshUntil: 30_000)]),
            ]
        ),
        Case(
            name: "the next claim is within the idle poll, and at least a millisecond away",
            steps: [
                (ready(0), [.takeHandedOver(limit: 4, freshUntil: 30_000)]),
                (.tookHandedOver(fresh: 0, stale: 0), [.claim(limit: 8, at: 0)]),
                (.claimed(count: 0, full: false), [.findNextDue]),
                (.nextDue(in: 90_000), [.sleep(until: 1_000)]),
                (.woke(signalled: true), [.nextPass]),
                (ready(1_000), [.takeHandedOver(limit: 4, freshUntil: 31_000)]),
                (.tookHandedOver(fresh: 0, stale: 0), [.claim(limit: 8, at: 1_000)]),
                (.claimed(count: 0, full: false), [.findNextDue]),
                (.nextDue(in: -50), [.sleep(until: 1_001)]),
            ]
        ),
        Case(
            name: "a full claim asks another loop to claim while this one sends",
            steps: [
                (ready(0), [.takeHandedOver(limit: 4, freshUntil: 30_000)]),
                (.tookHandedOver(fresh: 0, stale: 0), [.claim(limit: 8, at: 0)]),
                (.claimed(count: 8, full: true), [.wakeAnother, .send]),
                (.sent, [.nextPass]),
            ]
        ),
        Case(
            name: "handed-over pushes: half a batch beside a claim, a whole one without",
            steps: [
                (ready(0), [.takeHandedOver(limit: 4, freshUntil: 30_000)]),
                (.tookHandedOver(fresh: 4, stale: 0), [.claim(limit: 4, at: 0)]),
                (.claimed(count: 1, full: false), [.findNextDue]),
                (.nextDue(in: 300), [.send]),
                (.sent, [.nextPass]),
                (ready(100), [.takeHandedOver(limit: 8, freshUntil: 30_100)]),
                (.tookHandedOver(fresh: 8, stale: 0), [.send]),
                (.sent, [.nextPass]),
            ]
        ),
        Case(
            name: "handed-over pushes with less than half their lease left are put back, not sent",
            steps: [
                (ready(0), [.takeHandedOver(limit: 4, freshUntil: 30_000)]),
                (.tookHandedOver(fresh: 1, stale: 2), [.putBackStale]),
                (.putBack, [.claim(limit: 7, at: 0)]),
                (.claimed(count: 0, full: false), [.findNextDue]),
                (.nextDue(in: nil), [.send]),
                (.sent, [.nextPass]),
                // Only stale ones, no claim due: put back, and nothing to send.
                (ready(5), [.takeHandedOver(limit: 8, freshUntil: 30_005)]),
                (.tookHandedOver(fresh: 0, stale: 3), [.putBackStale]),
                (.putBack, [.sleep(until: 1_000)]),
            ]
        ),
        Case(
            name: "a failed claim sends what it took and tries again after an idle poll",
            steps: [
                (ready(0), [.takeHandedOver(limit: 4, freshUntil: 30_000)]),
                (.tookHandedOver(fresh: 0, stale: 0), [.claim(limit: 8, at: 0)]),
                (.claimFailed(count: 0), [.sleep(until: 1_000)]),
                (.woke(signalled: true), [.nextPass]),
                (ready(999), [.takeHandedOver(limit: 8, freshUntil: 30_999)]),
                (.tookHandedOver(fresh: 0, stale: 0), [.sleep(until: 1_000)]),
                (.woke(signalled: true), [.nextPass]),
                (ready(1_000), [.takeHandedOver(limit: 4, freshUntil: 31_000)]),
                (.tookHandedOver(fresh: 0, stale: 0), [.claim(limit: 8, at: 1_000)]),
                // A probe claimed before the failure is still sent.
                (.claimFailed(count: 1), [.send]),
            ]
        ),
        Case(
            name: "outcomes held: wait for them, claim nothing, then claim at once",
            steps: [
                (ready(0, wanted: false, held: true), [.waitForOutcomes(timeout: 1_000)]),
                (.outcomesWaited, [.nextPass]),
                (ready(0, wanted: false, held: true), [.waitForOutcomes(timeout: 1_000)]),
                (.outcomesWaited, [.nextPass]),
                (ready(0), [.takeHandedOver(limit: 4, freshUntil: 30_000)]),
                (.tookHandedOver(fresh: 0, stale: 0), [.claim(limit: 8, at: 0)]),
            ]
        ),
        Case(
            name: "stopping ends the loop between passes, before anything else",
            steps: [
                (ready(0, wanted: true, held: true, stopping: true), [.stop])
            ]
        ),
        Case(
            name: "a batch taken is sent even when stopping begins meanwhile; then the loop stops",
            steps: [
                (ready(0), [.takeHandedOver(limit: 4, freshUntil: 30_000)]),
                (.tookHandedOver(fresh: 0, stale: 0), [.claim(limit: 8, at: 0)]),
                (.claimed(count: 2, full: false), [.findNextDue]),
                (.nextDue(in: 1), [.send]),
                (.sent, [.nextPass]),
                (ready(1, stopping: true), [.stop]),
            ]
        ),
    ]

    @Test("events in, actions out", arguments: cases)
    func table(_ test: Case) {
        var machine = Machine(configuration: Self.configuration)
        for (index, (event, expected)) in test.steps.enumerated() {
            let actions = machine.handle(event)
            #expect(actions == expected, "step \(index): \(event)")
        }
    }

    @Test("a batch of one claims one at a time, with no hand-off beside the claim")
    func batchOfOne() {
        var machine = Machine(configuration: .init(batchSize: 1, lease: 1_000, idlePoll: 100))
        #expect(machine.handle(Self.ready(0)) == [.takeHandedOver(limit: 0, freshUntil: 500)])
        #expect(machine.handle(.tookHandedOver(fresh: 0, stale: 0)) == [.claim(limit: 1, at: 0)])
        #expect(machine.handle(.claimed(count: 1, full: true)) == [.wakeAnother, .send])
    }

    @Test("the machine says where the pass is")
    func phases() {
        var machine = Machine(configuration: Self.configuration)
        #expect(machine.phase == .idle && machine.claimAt == .min && !machine.timedOut)
        _ = machine.handle(Self.ready(7))
        #expect(machine.phase == .takingHandedOver(at: 7, claim: true))
        _ = machine.handle(.tookHandedOver(fresh: 0, stale: 0))
        #expect(machine.phase == .claiming(at: 7, handed: 0))
        _ = machine.handle(.claimed(count: 0, full: false))
        #expect(machine.phase == .findingNextDue(at: 7, taken: 0))
        _ = machine.handle(.nextDue(in: 3))
        #expect(machine.phase == .sleeping && machine.claimAt == 10)
        _ = machine.handle(.woke(signalled: false))
        #expect(machine.phase == .idle && machine.timedOut)
        _ = machine.handle(Self.ready(8, stopping: true))
        #expect(machine.phase == .stopped)
    }
}
