import Foundation
import HeraldPush
import HeraldServer
import HeraldSimulation
import HeraldStore
import HeraldStoreSQLite
import HeraldTestSupport
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import HeraldDispatch

/// The dispatcher over the real SQLite store, with a scripted push sender and a manual clock:
/// what it does with each outcome, in which order it sends, and how it stops.
@Suite(.timeLimit(.minutes(2)))
struct DispatcherTests {
    /// The manual clock's start: the pushes' times are around it.
    static let start: Int64 = 1_700_000_000_000
    static let hour: Int64 = 3_600_000

    @Test("retry later backs off with equal jitter, doubling up to the maximum, and sends again only when due")
    func retryBackoff() async throws {
        let throttled = PushOutcome.retryLater(reason: "Throttled")
        try await Rig.with(
            .perPush(["p": [throttled, throttled, throttled, .delivered(receipt: "r-1")]]),
            retryMaximum: .seconds(3),
            pushes: [Self.push("p")]
        ) { (rig: Rig) async throws in
            var times = [Self.start]
            // Attempt n waits between half and all of min(1 s × 2^(n-1), 3 s).
            for (attempt, ceiling) in [(1, Int64(1000)), (2, 2000), (3, 3000)] {
                let completion = try #require(await rig.store.waitForCompletions(attempt).last)
                guard case .retry(let at) = completion.disposition else {
                    Issue.record("attempt \(attempt) was not retried: \(completion)")
                    return
                }
                let delay = at - times[attempt - 1]
                #expect(delay >= ceiling / 2 && delay <= ceiling, "attempt \(attempt): \(delay) ms")
                let entry = try #require(try await rig.sqlite.push(id: "p"))
                #expect(entry.state == .queued && entry.nextAttemptAt == at && entry.lastReason == "Throttled")
                #expect(entry.attempts == attempt)
                times.append(at)
                rig.clock.set(at)
                rig.dispatcher.wake()
            }
            let last = try #require(await rig.store.waitForCompletions(4).last)
            #expect(last.disposition == .finish(.delivered))
            // Each attempt was sent when it was due, not before (the clock only shows these times).
            #expect(rig.sender.calls.map(\.at) == times)
            let entry = try #require(try await rig.sqlite.push(id: "p"))
            #expect(entry.state == .delivered && entry.attempts == 4)
            let log = try await rig.sqlite.deliveryLog(pushID: "p")
            #expect(log.map(\.state) == [.queued, .queued, .queued, .queued, .delivered])
            #expect(log.dropFirst().prefix(3).allSatisfy { $0.reason == "Throttled" })
        }
    }

    @Test(
        "the backoff stays between half the ceiling and the ceiling, for every attempt",
        arguments: [0, 1, 2, 5, 9, 10, 30, 10_000]
    )
    func backoffBounds(attempts: Int) async throws {
        try await Rig.with(.inOrder([]), retryMaximum: .seconds(300), pushes: []) { (rig: Rig) async throws in
            let ceiling = min(300_000, Int64(1000) << min(max(attempts - 1, 0), 20))
            let delays = (0..<500).map { _ in rig.dispatcher.retryDelay(attempts: attempts) }
            #expect(delays.allSatisfy { $0 >= ceiling / 2 && $0 <= ceiling })
            // Drawn across the range, not pinned to one end: 500 uniform draws that all miss a
            // fifth of it would happen about once in 10^48 runs.
            #expect(delays.contains { $0 < ceiling / 2 + ceiling / 10 })
            #expect(delays.contains { $0 > ceiling - ceiling / 10 })
        }
    }

    @Test("Retry-After is honoured when longer than the backoff, and the backoff when longer than it")
    func retryAfter() async throws {
        try await Rig.with(
            .perPush([
                "long": [.retryLater(reason: "Unavailable", after: .seconds(30))],
                "short": [.retryLater(reason: "Throttled", after: .milliseconds(10))],
            ]),
            pushes: [Self.push("long", at: Self.start - 2), Self.push("short", at: Self.start - 1)]
        ) { (rig: Rig) async throws in
            let completions = await rig.store.waitForCompletions(2)
            let byID = Dictionary(uniqueKeysWithValues: completions.map { ($0.pushID, $0) })
            #expect(byID["long"]?.disposition == .retry(at: Self.start + 30_000))
            #expect(byID["long"]?.reason == "Unavailable")
            guard case .retry(let at) = byID["short"]?.disposition else {
                Issue.record("short was not retried: \(completions)")
                return
            }
            #expect(at >= Self.start + 500 && at <= Self.start + 1000)
            #expect(try await rig.sqlite.push(id: "long")?.nextAttemptAt == Self.start + 30_000)
        }
    }

    @Test("a push whose next attempt would come after its expiration expires instead")
    func expiresInsteadOfRetrying() async throws {
        try await Rig.with(
            .perPush([
                "soon": [.retryLater(reason: "Throttled")],
                "after-too-late": [.retryLater(reason: "Unavailable", after: .seconds(120))],
                "fits": [.retryLater(reason: "Unavailable", after: .seconds(30))],
                "network-expired": [.expired],
            ]),
            pushes: [
                // The first retry waits at least 500 ms: past this push's expiration.
                Self.push("soon", at: Self.start - 4, expires: Self.start + 400),
                Self.push("after-too-late", at: Self.start - 3, expires: Self.start + 60_000),
                Self.push("fits", at: Self.start - 2, expires: Self.start + 60_000),
                Self.push("network-expired", at: Self.start - 1),
            ]
        ) { (rig: Rig) async throws in
            let completions = await rig.store.waitForCompletions(4)
            let byID = Dictionary(uniqueKeysWithValues: completions.map { ($0.pushID, $0) })
            #expect(byID["soon"] == Self.finish("soon", .expired, "expired while retrying: Throttled"))
            #expect(
                byID["after-too-late"] == Self.finish("after-too-late", .expired, "expired while retrying: Unavailable")
            )
            #expect(byID["fits"]?.disposition == .retry(at: Self.start + 30_000))
            #expect(byID["network-expired"] == Self.finish("network-expired", .expired, nil))
            for id in ["soon", "after-too-late", "network-expired"] {
                let entry = try #require(try await rig.sqlite.push(id: id))
                #expect(entry.state == .expired && entry.attempts == 1, "\(id)")
            }
            #expect(try await rig.sqlite.push(id: "soon")?.lastReason == "expired while retrying: Throttled")
            #expect(try await rig.sqlite.push(id: "fits")?.state == .queued)
            #expect(rig.sender.calls.count == 1)
        }
    }

    @Test("calls go before messages, then the longest waiting")
    func callsBeforeMessages() async throws {
        try await Rig.with(
            .inOrder([]),
            batchSize: 1,
            pushes: [
                Self.push("m1", at: Self.start - 3000),
                Self.push("m2", at: Self.start - 2000),
                Self.push("c1", kind: .call, at: Self.start - 1000),
                Self.push("m3", at: Self.start - 500),
                Self.push("c2", kind: .call, at: Self.start),
            ]
        ) { (rig: Rig) async throws in
            _ = await rig.store.waitForCompletions(5)
            #expect(rig.sender.calls.map(\.pushIDs) == [["c1"], ["c2"], ["m1"], ["m2"], ["m3"]])
            // Calls to the PushKit token, messages to the messaging token.
            #expect(rig.sender.calls.map { $0.pushes[0].token } == ["voip-1", "voip-1", "tok-1", "tok-1", "tok-1"])
            #expect(try await rig.sqlite.outboxCounts()[.delivered] == 5)
        }
    }

    @Test("a dead token is cleared from its device, with the network's reason")
    func deadTokenCleared() async throws {
        try await Rig.with(
            .inOrder([.tokenDead(reason: "Unregistered", since: Self.start - 5)]),
            pushes: [Self.push("m1")]
        ) { (rig: Rig) async throws in
            let completion = try #require(await rig.store.waitForCompletions(1).first)
            #expect(
                completion
                    == PushCompletion(
                        pushID: "m1",
                        disposition: .finish(.tokenDead),
                        reason: "Unregistered",
                        deadToken: ("d1", "tok-1")
                    )
            )
            let entry = try #require(try await rig.sqlite.push(id: "m1"))
            #expect(entry.state == .tokenDead && entry.lastReason == "Unregistered")
            let device = try #require(try await rig.sqlite.device(id: "d1"))
            #expect(device.messagingToken == nil && device.tokenDeadReason == "Unregistered")
            #expect(device.voipToken == "voip-1")
        }
    }

    @Test("a refused push is failed with the network's reason and status, and not retried")
    func failedWithStatus() async throws {
        try await Rig.with(
            .perPush([
                "bad-topic": [.failed(reason: "BadTopic", status: 400)],
                "bad-data": [.failed(reason: "INVALID_ARGUMENT: data too large", status: nil)],
            ]),
            pushes: [
                Self.push("bad-topic", at: Self.start - 2), Self.push("bad-data", at: Self.start - 1),
                Self.push("fine"),
            ]
        ) { (rig: Rig) async throws in
            _ = await rig.store.waitForCompletions(3)
            let badTopic = try #require(try await rig.sqlite.push(id: "bad-topic"))
            #expect(badTopic.state == .failed && badTopic.lastReason == "BadTopic (400)" && badTopic.attempts == 1)
            let badData = try #require(try await rig.sqlite.push(id: "bad-data"))
            #expect(badData.state == .failed && badData.lastReason == "INVALID_ARGUMENT: data too large")
            #expect(try await rig.sqlite.push(id: "fine")?.state == .delivered)
            #expect(try await rig.sqlite.nextDueTime() == nil)
            #expect(rig.sender.calls.count == 1)
        }
    }

    @Test("a restarted dispatcher sends what its previous run had claimed at once, not after the lease")
    func restartReleasesOwnClaims() async throws {
        try await Rig.with(
            .inOrder([]),
            pushes: [Self.push("p")],
            claimedByPreviousRun: true
        ) { (rig: Rig) async throws in
            #expect(try #require(await rig.store.waitForCompletions(1).first).disposition == .finish(.delivered))
            #expect(rig.sender.calls.map(\.at) == [Self.start])
            #expect(try await rig.sqlite.push(id: "p")?.attempts == 2, "claimed before, and again")
        }
    }

    @Test("graceful shutdown sends and records the batch in flight, and claims nothing more")
    func gracefulShutdown() async throws {
        try await Rig.with(
            .inOrder([]),
            batchSize: 2,
            pushes: (0..<5).map { Self.push("p\($0)", at: Self.start - 10 + Int64($0)) },
            claimsServed: 1,
            holdSender: true
        ) { (rig: Rig) async throws in
            let calls = await rig.sender.waitForCalls(1)
            #expect(calls.map(\.pushIDs) == [["p0", "p1"]])
            #expect(rig.dispatcher.pushesInFlight == 2)
            #expect(rig.dispatcher.drained == nil)
            // Shutdown begins while the batch is at the network; then the network answers.
            await rig.group.triggerGracefulShutdown()
            rig.sender.openGate()
            try await rig.run.value
            // What the shutdown line reports: the one batch it waited for.
            #expect(rig.dispatcher.drained == Dispatcher.DrainReport(batches: 1, pushes: 2))

            #expect(rig.sender.calls.count == 1)
            #expect(rig.dispatcher.pushesInFlight == 0)
            #expect(try await rig.sqlite.push(id: "p0")?.state == .delivered)
            #expect(try await rig.sqlite.push(id: "p1")?.state == .delivered)
            let counts = try await rig.sqlite.outboxCounts()
            #expect(counts[.queued] == 3 && counts[.sending] == 0)
        }
    }

    @Test("each push's final outcome is logged at info once, with its ids and never its token")
    func outcomesLogged() async throws {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "test.dispatcher") { label in
            JSONLogHandler(label: label) { line in lines.withLock { $0.append(line) } }
        }
        logger.logLevel = .info
        var fcm = StoreFixtures.fcmPush("g", device: "a1", at: Self.start - 1, expires: Self.start + Self.hour)
        fcm.priority = 5
        try await Rig.with(
            .perPush([
                "d": [.delivered(receipt: "r-1")],
                "t": [.tokenDead(reason: "Unregistered", since: nil)],
                "f": [.failed(reason: "BadTopic", status: 400)],
                "x": [.expired],
                "r": [.retryLater(reason: "Throttled")],
                "c": [.delivered(receipt: "r-2")],
                "g": [.delivered(receipt: "r-3")],
            ]),
            pushes: [
                Self.push("d", at: Self.start - 7), Self.push("t", at: Self.start - 6),
                Self.push("f", at: Self.start - 5), Self.push("x", at: Self.start - 4),
                Self.push("r", at: Self.start - 3), Self.push("c", kind: .call, at: Self.start - 2), fcm,
            ],
            logger: logger
        ) { (rig: Rig) async throws in
            _ = await rig.store.waitForCompletions(7)
        }
        let written = lines.withLock { $0 }
        let records = try written.map {
            try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        let finished = records.filter { $0["message"] as? String == "push finished" }
        // One line per final outcome; the push sent back for a retry has none yet.
        #expect(finished.count == 6, "\(written)")
        #expect(finished.allSatisfy { $0["level"] as? String == "info" })
        let byPush = Dictionary(
            finished.compactMap { record in
                (record["metadata"] as? [String: Any]).map { ($0["push"] as? String ?? "?", $0) }
            },
            uniquingKeysWith: { first, _ in first }
        )
        for (push, outcome, network, reason) in [
            ("d", "delivered", "apns", nil), ("t", "token_dead", "apns", "Unregistered"),
            ("f", "failed", "apns", "BadTopic (400)"), ("x", "expired", "apns", nil),
            ("c", "delivered", "apns", nil), ("g", "delivered", "fcm", nil),
        ] {
            let metadata = try #require(byPush[push], "no line for \(push): \(written)")
            #expect(metadata["outcome"] as? String == outcome && metadata["network"] as? String == network)
            #expect(metadata["device"] as? String == (push == "g" ? "a1" : "d1"))
            // The app, not the VoIP topic.
            #expect(metadata["app"] as? String == StoreFixtures.appID, "\(metadata)")
            #expect(metadata["kind"] as? String == (push == "c" ? "call" : "message"))
            // Counts are JSON numbers, not strings.
            #expect((metadata["attempts"] as? NSNumber)?.intValue == 1 && !(metadata["attempts"] is String))
            #expect(metadata["latency_ms"] is NSNumber, "\(metadata)")
            #expect(metadata["reason"] as? String == reason, "\(metadata)")
        }
        for token in ["tok-1", "voip-1", "fcm-1"] {
            #expect(!written.joined().contains(token), "the token \(token) is in the logs")
        }
    }

    // MARK: Fixtures

    /// A push to device d1 (tokens tok-1 and voip-1) accepted at `time`, due then.
    static func push(
        _ id: String,
        kind: OutboxKind = .message,
        at time: Int64 = start,
        expires: Int64? = nil
    )
        -> OutboxEntry
    {
        StoreFixtures.push(id, device: "d1", kind: kind, at: time, expires: expires ?? time + hour)
    }

    static func finish(_ id: String, _ state: PushState, _ reason: String?) -> PushCompletion {
        PushCompletion(pushID: id, disposition: .finish(state), reason: reason, deadToken: nil)
    }
}

/// A dispatcher (one worker unless told) running under a service group over a SQLite store seen
/// through an `ObservedOutboxStore`, with a scripted sender and a manual clock at
/// `DispatcherTests.start`.
struct Rig {
    let sqlite: SQLiteStore
    let store: ObservedOutboxStore
    let sender: ScriptedPushSender
    let clock: TestClock
    let dispatcher: Dispatcher
    let group: ServiceGroup
    let run: Task<Void, any Error>

    /// Returns once every push in `ids` has been handed to the sender.
    func waitUntilSent(_ ids: Set<String>) async {
        while !ids.isSubset(of: Set(sender.sentIDs)) {
            await sender.waitForCalls(sender.calls.count + 1)
        }
    }

    /// Accepts `pushes`, starts the dispatcher, runs `body`, and shuts the dispatcher down
    /// gracefully. `claimedByPreviousRun`: the pushes are claimed under the dispatcher's owner,
    /// with a long lease, before it starts. `claimsServed`: claims after that many wait for
    /// shutdown and find nothing. `holdSender`: the sender holds its calls until its gate opens.
    /// `unreachable`: that network is down (`ScriptedPushSender.setUnreachable`) from the start.
    /// Before the shutdown the store's calls stop failing (`ObservedOutboxStore.fail`) and the
    /// sender's gate opens.
    static func with(
        _ script: ScriptedPushSender.Script,
        workers: Int = 1,
        batchSize: Int = 256,
        retryMaximum: Duration = .seconds(8),
        pushes: [OutboxEntry],
        claimedByPreviousRun: Bool = false,
        claimsServed: Int? = nil,
        holdSender: Bool = false,
        unreachable: PushNetwork? = nil,
        handOffCapacity: Int = 512,
        outcomeLinger: Duration = .milliseconds(20),
        outcomeDeadlineAtStop: Duration = .seconds(10),
        logger given: Logger? = nil,
        _ body: (Rig) async throws -> Void
    ) async throws {
        let directory = NSTemporaryDirectory() + "herald-dispatcher-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var storeConfiguration = SQLiteStore.Configuration(path: directory + "/herald.sqlite")
        storeConfiguration.durable = false
        var logger = Logger(label: "test.dispatcher")
        logger.logLevel = .critical
        let sqlite = try SQLiteStore(configuration: storeConfiguration, logger: logger)
        let dispatcherLogger = given ?? logger
        try await sqlite.saveApp(StoreFixtures.app())
        try await sqlite.saveDevice(StoreFixtures.device("d1", token: "tok-1", voip: "voip-1"))
        try await sqlite.saveDevice(StoreFixtures.androidDevice("a1", token: "fcm-1"))
        if !pushes.isEmpty {
            #expect(try await sqlite.accept(StoreFixtures.ingest(pushes)) == .accepted)
        }
        var configuration = DispatcherConfiguration()
        configuration.workers = workers
        configuration.batchSize = batchSize
        configuration.retryBase = .seconds(1)
        configuration.retryMaximum = retryMaximum
        configuration.handOffCapacity = handOffCapacity
        configuration.outcomeLinger = outcomeLinger
        configuration.outcomeDeadlineAtStop = outcomeDeadlineAtStop
        if claimedByPreviousRun {
            let taken = try await sqlite.claim(
                limit: pushes.count,
                owner: configuration.owner,
                now: DispatcherTests.start,
                leaseUntil: DispatcherTests.start + DispatcherTests.hour
            )
            #expect(taken.count == pushes.count)
        }

        let clock = TestClock(frozenAt: DispatcherTests.start)
        let sender = ScriptedPushSender(script, clock: clock)
        if holdSender { sender.closeGate() }
        if let unreachable { sender.setUnreachable(unreachable) }
        let store = ObservedOutboxStore(sqlite, claimsServed: claimsServed)
        let dispatcher = Dispatcher(
            store: store,
            sender: sender,
            configuration: configuration,
            logger: dispatcherLogger,
            clock: clock
        )
        let group = ServiceGroup(services: [dispatcher], logger: logger)
        let run = Task { try await group.run() }
        let rig = Rig(
            sqlite: sqlite,
            store: store,
            sender: sender,
            clock: clock,
            dispatcher: dispatcher,
            group: group,
            run: run
        )
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

/// An outbox store that passes every call to another and lets a test wait for completions
/// instead of polling. It can also stop serving claims after some, as if shutdown began while the
/// dispatcher was about to claim: those claims wait until their task is cancelled and find
/// nothing. And its calls can fail while a test says the database is away: claims and reads
/// (`fail(claims:)`), outcome writes (`fail(completes:)`) apart, so a test can have the database
/// answer claims before the writer's next try.
final class ObservedOutboxStore: OutboxStore {
    struct Unavailable: Error, CustomStringConvertible {
        var description: String { "the database is unreachable (test)" }
    }

    private struct Failing {
        var claims = false
        var completes = false
    }

    private let completions = Recorded<PushCompletion>()
    private let claims = Mutex(0)
    private let failing = Mutex(Failing())
    /// Each claim statement's networks, as it is made (failed ones included).
    let claimsMade = Recorded<Set<PushNetwork>>()
    /// Each failed outcome write's number of batches, as it fails.
    let failedCompletes = Recorded<Int>()

    private let base: any OutboxStore
    private let claimsServed: Int?

    init(_ base: any OutboxStore, claimsServed: Int? = nil) {
        self.base = base
        self.claimsServed = claimsServed
    }

    /// Returns the completions recorded so far once there are at least `count` (or the task is
    /// cancelled).
    func waitForCompletions(_ count: Int) async -> [PushCompletion] {
        await completions.wait(forCount: count)
    }

    /// From now on claims and reads (`claims`) and outcome writes (`completes`) fail, or not.
    func fail(claims: Bool, completes: Bool) {
        failing.withLock { $0 = Failing(claims: claims, completes: completes) }
    }

    /// The store behind, unless claims and reads fail.
    private func reachable() throws -> any OutboxStore {
        if failing.withLock({ $0.claims }) { throw Unavailable() }
        return base
    }

    /// Throws, and records the failure, while outcome writes fail.
    private func checkWrite(batches: Int) throws {
        if failing.withLock({ $0.completes }) {
            failedCompletes.append(contentsOf: [batches])
            throw Unavailable()
        }
    }

    /// How many batches each gathered write held.
    let batchWrites = Recorded<Int>()

    /// Claims and outcome writes are watched (and fail while the test says so); every other
    /// change goes to the store behind, unless claims and reads fail.
    func apply(_ changes: [StoreChange]) async throws -> [ChangeOutcome] {
        guard changes.count == 1, case .work(let work) = changes[0] else { return try await reachable().apply(changes) }
        switch work {
        case .claimPushes(let lease, let networks):
            return [.answered(.pushes(try await claim(lease, networks: networks)))]
        case .completePushes(let batches):
            try checkWrite(batches: batches.count)
            try await base.complete(batches)
            batchWrites.append(contentsOf: [batches.count])
            completions.append(contentsOf: batches.flatMap(\.completions))
            return [.applied]
        default:
            return try await reachable().apply(changes)
        }
    }

    private func claim(_ lease: StoreWork.Lease, networks: Set<PushNetwork>) async throws -> [ClaimedPush] {
        claimsMade.append(contentsOf: [networks])
        let serve = claims.withLock { claims -> Bool in
            claims += 1
            return claimsServed.map { claims <= $0 } ?? true
        }
        guard serve else {
            let (cancelled, signal) = AsyncStream<Void>.makeStream()
            await withTaskCancellationHandler {
                for await _ in cancelled {}
            } onCancel: {
                signal.finish()
            }
            return []
        }
        return try await reachable().claim(
            limit: lease.limit,
            owner: lease.owner,
            now: lease.now,
            leaseUntil: lease.until,
            networks: networks
        )
    }

    func receipt(idempotencyKey: String) async throws -> [UInt8]? {
        try await reachable().receipt(idempotencyKey: idempotencyKey)
    }
    func message(id: String) async throws -> MessageRecord? { try await reachable().message(id: id) }
    func push(id: String) async throws -> OutboxEntry? { try await reachable().push(id: id) }
    func deliveryLog(pushID: String) async throws -> [DeliveryEvent] {
        try await reachable().deliveryLog(pushID: pushID)
    }
    func receipts(pushID: String) async throws -> [PushReceipt] { try await reachable().receipts(pushID: pushID) }
    func nextDueTime() async throws -> Int64? { try await reachable().nextDueTime() }
    func outboxCounts() async throws -> OutboxCounts { try await reachable().outboxCounts() }
    func queueCounts() async throws -> OutboxCounts { try await reachable().queueCounts() }
    func queuedMessages(appID: String) async throws -> Int { try await reachable().queuedMessages(appID: appID) }
    func pushes(matching query: PushQuery) async throws -> PushPage { try await reachable().pushes(matching: query) }
    func pushSummaries(ids: [String]) async throws -> [PushSummary] { try await reachable().pushSummaries(ids: ids) }
    func pushActivity(since: Int64, sampleLimit: Int) async throws -> PushActivity {
        try await reachable().pushActivity(since: since, sampleLimit: sampleLimit)
    }
    func devicesSent(subjectID: String, since: Int64, among deviceIDs: [String]) async throws -> Set<String> {
        try await reachable().devicesSent(subjectID: subjectID, since: since, among: deviceIDs)
    }
    func nextDeadlineDueTime() async throws -> Int64? { try await reachable().nextDeadlineDueTime() }
    func unreportedCalls(deviceID: String) async throws -> UnreportedCalls? {
        try await reachable().unreportedCalls(deviceID: deviceID)
    }
}
