import HeraldPush
import HeraldStore
import HeraldStoreSQLite
import HeraldTestSupport
import ServiceLifecycle
import Testing

@testable import HeraldDispatch

/// Outcomes learned while the store is away (issue 30): kept, tried again until the store
/// answers, written before any claim could take their pushes back, and never a reason to send a
/// push the network accepted a second time.
@Suite(.timeLimit(.minutes(2)))
struct OutcomeOutageTests {
    typealias Machine = OutcomeWriteMachine

    /// One step of the machine: an event, the actions it must give, and the state after it.
    struct Step: Sendable, CustomStringConvertible {
        var event: Machine.Event
        /// Left out: the event gives none.
        var actions: [Machine.Action] = []
        var pending: Int
        var holdsClaims: Bool
        /// The machine's count of failed tries while writes fail (nil, left out: they are not failing).
        var failures: Int? = nil

        var description: String { "\(event)" }
    }

    @Test("the outcome writes' machine: one warning when writes fail, claims held until every outcome is written")
    func machineTable() {
        let steps: [Step] = [
            // Writes succeed: nothing to say, nothing held.
            Step(event: .handed(count: 3), pending: 3, holdsClaims: false),
            Step(event: .written(count: 3, at: 10), pending: 0, holdsClaims: false),
            // The store goes away with two batches out: one warning, with what waits, and claims held.
            Step(event: .handed(count: 2), pending: 2, holdsClaims: false),
            Step(event: .handed(count: 1), pending: 3, holdsClaims: false),
            Step(
                event: .failed(at: 100),
                actions: [.startedFailing(pending: 3)],
                pending: 3,
                holdsClaims: true,
                failures: 1
            ),
            // Later failures (either write's) are counted, not logged.
            Step(event: .failed(at: 200), pending: 3, holdsClaims: true, failures: 2),
            Step(event: .failed(at: 1_200), pending: 3, holdsClaims: true, failures: 3),
            // The store answers: one line, but the claims stay held while an outcome waits…
            Step(
                event: .written(count: 2, at: 8_100),
                actions: [.recovered(downFor: 8_000, failures: 3)],
                pending: 1,
                holdsClaims: true
            ),
            // …and come back with the last one.
            Step(event: .written(count: 1, at: 8_120), actions: [.resumeClaims], pending: 0, holdsClaims: false),
            // A stop with the store away: what is given up is said, and nothing stays held.
            Step(event: .handed(count: 4), pending: 4, holdsClaims: false),
            Step(
                event: .failed(at: 9_000),
                actions: [.startedFailing(pending: 4)],
                pending: 4,
                holdsClaims: true,
                failures: 1
            ),
            Step(
                event: .gaveUp(count: 4, at: 19_000),
                actions: [.gaveUp(count: 4), .resumeClaims],
                pending: 0,
                holdsClaims: false,
                failures: 1
            ),
        ]
        var machine = Machine()
        for step in steps {
            let actions = machine.handle(step.event)
            #expect(actions == step.actions, "\(step)")
            #expect(machine.pending == step.pending, "\(step)")
            #expect(machine.holdsClaims == step.holdsClaims, "\(step)")
            #expect(machine.failing?.failures == step.failures, "\(step)")
        }
    }

    @Test(
        "a failed write is tried again after 100 ms doubling to 1 s, with equal jitter, however many tries",
        arguments: [(1, 100), (2, 200), (3, 400), (4, 800), (5, 1_000), (6, 1_000), (1_000, 1_000)]
    )
    func retryDelays(attempt: Int, ceiling: Int64) {
        let machine = Machine()
        #expect(machine.backoff.ceiling(attempt: attempt) == .milliseconds(ceiling))
        let delays = (0..<200).map { _ in machine.retryDelay(attempt: attempt) }
        #expect(delays.allSatisfy { $0 >= .milliseconds(ceiling) / 2 && $0 <= .milliseconds(ceiling) })
    }

    @Test(
        "outcomes learned while the store is away are written when it answers, before any claim, and nothing is sent twice past the lease"
    )
    func outcomesSurviveAnOutage() async throws {
        let call = DispatcherTests.push("c", kind: .call, at: DispatcherTests.start - 3)
        let message = DispatcherTests.push("m", at: DispatcherTests.start - 2)
        let throttled = DispatcherTests.push("r", at: DispatcherTests.start - 1)
        try await Rig.with(
            .perPush(["r": [.retryLater(reason: "Throttled")]]),
            workers: 2,
            pushes: [call, message, throttled],
            holdSender: true
        ) { (rig: Rig) async throws in
            // Every push in flight: the network has them and has not answered yet.
            await rig.waitUntilSent(["c", "m", "r"])
            rig.store.fail(claims: true, completes: true)
            // Their leases (60 s) end while the store is away: once it answers, a claim would
            // take them again.
            rig.clock.advance(by: .seconds(61))
            rig.sender.openGate()
            // The outcomes' writes fail, and are tried again: in all more tries than the five
            // after which a write used to be given up.
            await rig.store.failedCompletes.wait(forCount: 4)
            #expect(rig.dispatcher.writer.holdsClaims)
            // The store answers claims again before the writes' next tries: nothing is claimed
            // while outcomes wait, over more than one idle poll (1 s).
            rig.store.fail(claims: false, completes: true)
            let claimsBefore = rig.store.claimsMade.all.count
            let failuresBefore = rig.store.failedCompletes.all.count
            await rig.store.failedCompletes.wait(forCount: failuresBefore + 4)
            #expect(rig.store.failedCompletes.all.count >= 8)
            #expect(rig.store.claimsMade.all.count == claimsBefore, "a loop claimed while outcomes waited")
            #expect(rig.sender.sentIDs.sorted() == ["c", "m", "r"])
            #expect(rig.dispatcher.writer.pending == 3)

            // The store takes writes again: every outcome is recorded, then claims resume.
            rig.store.fail(claims: false, completes: false)
            let written = await rig.store.waitForCompletions(3)
            #expect(Set(written.map(\.pushID)) == ["c", "m", "r"])
            #expect(try await rig.sqlite.push(id: "c")?.state == .delivered)
            #expect(try await rig.sqlite.push(id: "m")?.state == .delivered)
            let retried = try #require(try await rig.sqlite.push(id: "r"))
            #expect(retried.state == .queued && retried.lastReason == "Throttled")
            // The retry is the only push sent again, when due.
            rig.clock.set(retried.nextAttemptAt)
            rig.dispatcher.wake()
            #expect(await rig.store.waitForCompletions(4).last?.disposition == .finish(.delivered))
            #expect(rig.sender.sentIDs.sorted() == ["c", "m", "r", "r"])
            // The writer counts an outcome written once the store's call has returned to it, just
            // after the store recorded it (what `waitForCompletions` sees): let it get there (a CI
            // run read 1 pending in between; the writer's count has no signal: polled).
            try await eventually("no outcome pending", timeout: .seconds(5)) { rig.dispatcher.writer.pending == 0 }
            #expect(!rig.dispatcher.writer.holdsClaims)
            for id in ["c", "m"] {
                let log = try await rig.sqlite.deliveryLog(pushID: id)
                #expect(log.map(\.state) == [.queued, .delivered], "\(id)")
            }
        }
    }

    @Test("a graceful stop with the store away gives up its outcomes at the deadline instead of hanging")
    func stopIsBounded() async throws {
        try await Rig.with(
            .inOrder([]),
            workers: 2,
            pushes: [DispatcherTests.push("m")],
            holdSender: true,
            outcomeDeadlineAtStop: .milliseconds(300)
        ) { (rig: Rig) async throws in
            await rig.waitUntilSent(["m"])
            rig.store.fail(claims: true, completes: true)
            rig.sender.openGate()
            await rig.store.failedCompletes.wait(forCount: 1)
            let began = ContinuousClock.now
            await rig.group.triggerGracefulShutdown()
            try await rig.run.value
            let took = ContinuousClock.now - began
            // The deadline and one last try, not the store's return.
            #expect(took < .seconds(5), "the stop took \(took)")
            #expect(rig.dispatcher.writer.pending == 0)
            // Unrecorded: still claimed, sent again when its lease ends (as after a crash).
            #expect(try await rig.sqlite.push(id: "m")?.state == .sending)
        }
    }
}
