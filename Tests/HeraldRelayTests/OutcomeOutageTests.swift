import Foundation
import HeraldPush
import HeraldStore
import HeraldStoreSQLite
import HeraldTestSupport
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import HeraldRelay

/// Outcomes learned while the store is away (issue 30): kept, tried again until the store
/// answers, written before any claim could take their pushes back, and never a reason to send a
/// push the network accepted a second time.
@Suite(.timeLimit(.minutes(2)))
struct OutcomeOutageTests {
    typealias Machine = OutcomeWriteMachine

    /// One step of the machine: an event, the actions it must give, and the state after it.
    struct Step: Sendable, CustomStringConvertible {
        var event: Machine.Event
        var actions: [Machine.Action]
        var pending: Int
        var holdsClaims: Bool
        var failures: Int?

        var description: String { "\(event)" }
    }

    @Test("the outcome writes' machine: one warning when writes fail, claims held until every outcome is written")
    func machineTable() {
        let steps: [Step] = [
            // Writes succeed: nothing to say, nothing held.
            Step(event: .handed(count: 3), actions: [], pending: 3, holdsClaims: false, failures: nil),
            Step(event: .written(count: 3, at: 10), actions: [], pending: 0, holdsClaims: false, failures: nil),
            // The store goes away with two batches out: one warning, with what waits, and claims held.
            Step(event: .handed(count: 2), actions: [], pending: 2, holdsClaims: false, failures: nil),
            Step(event: .handed(count: 1), actions: [], pending: 3, holdsClaims: false, failures: nil),
            Step(
                event: .failed(at: 100),
                actions: [.startedFailing(pending: 3)],
                pending: 3,
                holdsClaims: true,
                failures: 1
            ),
            // Later failures (either write's) are counted, not logged.
            Step(event: .failed(at: 200), actions: [], pending: 3, holdsClaims: true, failures: 2),
            Step(event: .failed(at: 1_200), actions: [], pending: 3, holdsClaims: true, failures: 3),
            // The store answers: one line, but the claims stay held while an outcome waits…
            Step(
                event: .written(count: 2, at: 8_100),
                actions: [.recovered(downFor: 8_000, failures: 3)],
                pending: 1,
                holdsClaims: true,
                failures: nil
            ),
            // …and come back with the last one.
            Step(
                event: .written(count: 1, at: 8_120),
                actions: [.resumeClaims],
                pending: 0,
                holdsClaims: false,
                failures: nil
            ),
            // A stop with the store away: what is given up is said, and nothing stays held.
            Step(event: .handed(count: 4), actions: [], pending: 4, holdsClaims: false, failures: nil),
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
        try await OutageRig.with(
            .perPush(["r": [.retryLater(reason: "Throttled")]]),
            pushes: [call, message, throttled]
        ) { rig in
            // Every push in flight: the network has them and has not answered yet.
            await rig.waitUntilSent(["c", "m", "r"])
            rig.store.fail(claims: true, completes: true)
            // Their leases (60 s) end while the store is away: once it answers, a claim would
            // take them again.
            rig.clock.advance(by: 61_000)
            rig.sender.openGate()
            // The outcomes' writes fail, and are tried again: in all more tries than the five
            // after which a write used to be given up.
            await rig.store.failedCompletes.wait(forCount: 4)
            #expect(rig.dispatcher.writer.holdsClaims)
            // The store answers claims again before the writes' next tries: nothing is claimed
            // while outcomes wait, over more than one idle poll (1 s).
            rig.store.fail(claims: false, completes: true)
            let claimsBefore = rig.store.claimAttempts
            let failuresBefore = rig.store.failedCompletes.all.count
            await rig.store.failedCompletes.wait(forCount: failuresBefore + 4)
            #expect(rig.store.failedCompletes.all.count >= 8)
            #expect(rig.store.claimAttempts == claimsBefore, "a loop claimed while outcomes waited")
            #expect(rig.sender.sentIDs.sorted() == ["c", "m", "r"])
            #expect(rig.dispatcher.writer.pending == 3)

            // The store takes writes again: every outcome is recorded, then claims resume.
            rig.store.fail(claims: false, completes: false)
            let written = await rig.observed.waitForCompletions(3)
            #expect(Set(written.map(\.pushID)) == ["c", "m", "r"])
            #expect(try await rig.sqlite.push(id: "c")?.state == .delivered)
            #expect(try await rig.sqlite.push(id: "m")?.state == .delivered)
            let retried = try #require(try await rig.sqlite.push(id: "r"))
            #expect(retried.state == .queued && retried.lastReason == "Throttled")
            // The retry is the only push sent again, when due.
            rig.clock.set(retried.nextAttemptAt)
            rig.dispatcher.wake()
            #expect(await rig.observed.waitForCompletions(4).last?.disposition == .finish(.delivered))
            #expect(rig.sender.sentIDs.sorted() == ["c", "m", "r", "r"])
            #expect(rig.dispatcher.writer.pending == 0 && !rig.dispatcher.writer.holdsClaims)
            for id in ["c", "m"] {
                let log = try await rig.sqlite.deliveryLog(pushID: id)
                #expect(log.map(\.state) == [.queued, .delivered], "\(id)")
            }
        }
    }

    @Test("a graceful stop with the store away gives up its outcomes at the deadline instead of hanging")
    func stopIsBounded() async throws {
        try await OutageRig.with(
            .inOrder([]),
            pushes: [DispatcherTests.push("m")],
            deadlineAtStop: .milliseconds(300)
        ) { rig in
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

/// An outbox store whose calls fail while a test says the database is away: claims and reads
/// (`fail(claims:)`), outcome writes (`fail(completes:)`) apart, so a test can have the database
/// answer claims before the writer's next try. It counts claim attempts and failed writes.
final class FlakyOutboxStore: OutboxStore {
    struct Unavailable: Error, CustomStringConvertible {
        var description: String { "the database is unreachable (test)" }
    }

    private struct Failing {
        var claims = false
        var completes = false
    }

    private let base: any OutboxStore
    private let failing = Mutex(Failing())
    private let claims = Atomic<Int>(0)
    /// Each failed outcome write, as it fails.
    let failedCompletes = Recorded<Int>()

    init(_ base: any OutboxStore) { self.base = base }

    func fail(claims: Bool, completes: Bool) {
        failing.withLock { $0 = Failing(claims: claims, completes: completes) }
    }

    /// Claims tried so far, failed ones included.
    var claimAttempts: Int { claims.load(ordering: .relaxed) }

    private func check(_ kind: KeyPath<Failing, Bool>) throws {
        if failing.withLock({ $0[keyPath: kind] }) { throw Unavailable() }
    }

    func complete(_ completions: [PushCompletion], now: Int64) async throws {
        try await complete([CompletionBatch(completions: completions, now: now)])
    }

    func complete(_ batches: [CompletionBatch]) async throws {
        do {
            try check(\.completes)
        } catch {
            failedCompletes.append(contentsOf: [batches.count])
            throw error
        }
        try await base.complete(batches)
    }

    func claim(
        limit: Int,
        owner: String,
        now: Int64,
        leaseUntil: Int64,
        networks: Set<PushNetwork>
    ) async throws -> [ClaimedPush] {
        claims.add(1, ordering: .relaxed)
        try check(\.claims)
        return try await base.claim(limit: limit, owner: owner, now: now, leaseUntil: leaseUntil, networks: networks)
    }

    func accept(_ ingest: Ingest) async throws -> IngestOutcome {
        try check(\.claims)
        return try await base.accept(ingest)
    }
    func message(id: String) async throws -> MessageRecord? {
        try check(\.claims)
        return try await base.message(id: id)
    }
    func push(id: String) async throws -> OutboxEntry? {
        try check(\.claims)
        return try await base.push(id: id)
    }
    func deliveryLog(pushID: String) async throws -> [DeliveryEvent] {
        try check(\.claims)
        return try await base.deliveryLog(pushID: pushID)
    }
    func releaseClaims(owner: String, now: Int64) async throws -> Int {
        try check(\.claims)
        return try await base.releaseClaims(owner: owner, now: now)
    }
    func nextDueTime() async throws -> Int64? {
        try check(\.claims)
        return try await base.nextDueTime()
    }
    func outboxCounts() async throws -> OutboxCounts {
        try check(\.claims)
        return try await base.outboxCounts()
    }
    func pushes(matching query: PushQuery) async throws -> PushPage {
        try check(\.claims)
        return try await base.pushes(matching: query)
    }
}

/// A dispatcher (two loops) over SQLite seen through a `FlakyOutboxStore` (and an
/// `ObservedOutboxStore` above it, to wait for recorded outcomes), a scripted sender whose gate
/// starts closed, and a manual clock at `DispatcherTests.start`.
struct OutageRig {
    let sqlite: SQLiteStore
    let store: FlakyOutboxStore
    let observed: ObservedOutboxStore
    let sender: ScriptedPushSender
    let clock: ManualClock
    let dispatcher: Dispatcher
    let group: ServiceGroup
    let run: Task<Void, any Error>

    /// Returns once every push in `ids` has been handed to the sender.
    func waitUntilSent(_ ids: Set<String>) async {
        while !ids.isSubset(of: Set(sender.sentIDs)) {
            await sender.waitForCalls(sender.calls.count + 1)
        }
    }

    static func with(
        _ script: ScriptedPushSender.Script,
        pushes: [OutboxEntry],
        deadlineAtStop: Duration = .seconds(10),
        _ body: (OutageRig) async throws -> Void
    ) async throws {
        let directory = NSTemporaryDirectory() + "herald-outage-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var storeConfiguration = SQLiteStore.Configuration(path: directory + "/herald.sqlite")
        storeConfiguration.durable = false
        var logger = Logger(label: "test.outage")
        logger.logLevel = .critical
        let sqlite = try SQLiteStore(configuration: storeConfiguration, logger: logger)
        try await sqlite.saveApp(StoreFixtures.app())
        try await sqlite.saveDevice(StoreFixtures.device("d1", token: "tok-1", voip: "voip-1"))
        #expect(try await sqlite.accept(StoreFixtures.ingest(pushes)) == .accepted)
        var configuration = DispatcherConfiguration()
        configuration.workers = 2
        configuration.outcomeDeadlineAtStop = deadlineAtStop
        let clock = ManualClock(at: DispatcherTests.start)
        let sender = ScriptedPushSender(script, now: { clock.now() })
        sender.closeGate()
        let store = FlakyOutboxStore(sqlite)
        let observed = ObservedOutboxStore(store)
        let dispatcher = Dispatcher(
            store: observed,
            sender: sender,
            configuration: configuration,
            logger: logger,
            now: { clock.now() }
        )
        let group = ServiceGroup(services: [dispatcher], logger: logger)
        let run = Task { try await group.run() }
        let rig = OutageRig(
            sqlite: sqlite,
            store: store,
            observed: observed,
            sender: sender,
            clock: clock,
            dispatcher: dispatcher,
            group: group,
            run: run
        )
        defer { run.cancel() }
        do {
            try await body(rig)
        } catch {
            store.fail(claims: false, completes: false)
            sender.openGate()
            await group.triggerGracefulShutdown()
            _ = try? await run.value
            throw error
        }
        store.fail(claims: false, completes: false)
        sender.openGate()
        await group.triggerGracefulShutdown()
        try await run.value
    }
}
