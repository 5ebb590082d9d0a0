import Foundation
import HeraldBatching
public import HeraldDomain
public import HeraldPush
public import HeraldStore
public import HeraldTracing
public import Logging
import Metrics
public import ServiceLifecycle
import Synchronization

/// How the dispatcher drains the outbox.
public struct DispatcherConfiguration: Sendable {
    /// Who claims (unique per relay node); claims left by an earlier run of the same owner are
    /// released at start.
    public var owner: String = "local"
    /// Concurrent claim-send-complete loops. Few loops claim bigger batches; two keep the
    /// provider busy while one records outcomes (measured in docs/performance.md).
    public var workers: Int = 2
    /// The most pushes one loop claims at a time. At most `workers × batchSize` pushes are being
    /// sent, and up to `batchSize` more finished but not yet recorded (`outcomeLinger`): after a
    /// crash, at most `(workers + 1) × batchSize` (768 by default) are sent again (at least once;
    /// the phone drops the repeats). Measured in docs/performance.md.
    public var batchSize: Int = 256
    /// How long a claim holds before another worker may take the push again.
    public var lease: Duration = .seconds(60)
    /// How long an idle loop sleeps when nothing wakes it.
    public var idlePoll: Duration = .seconds(1)
    /// The first retry delay after `retry later`; doubled per attempt up to `retryMaximum`, then
    /// drawn between half of that and all of it (see `Dispatcher.retryDelay(attempts:)`).
    public var retryBase: Duration = .seconds(1)
    /// The longest backoff, jitter included (a longer `Retry-After` from the network still wins).
    public var retryMaximum: Duration = .seconds(300)
    /// While a network is unreachable, how often one of its pushes (a call first) is sent to see
    /// whether it answers again; the rest of its pushes wait for that answer rather than each
    /// backing off on its own. Bounds how late the backlog starts after the network's return.
    public var probeInterval: Duration = .milliseconds(250)
    /// How many pushes this node's own ingests may hand to it in memory (`PushHandOff`): written
    /// already claimed by this node, so no claim statement takes them back from the store and no
    /// other node is woken for them. The bound counts the pushes being sent too, and is never
    /// more than `workers × batchSize`, so the node holds no more than it can send at once; beyond
    /// it (a backlog, or loops held by a slow provider) pushes are written queued for any node to
    /// claim. 0: every push goes through a claim.
    public var handOffCapacity: Int = 512
    /// How long a batch's final outcomes wait for the batches other loops finish meanwhile, to
    /// be recorded together in one store write (the dispatcher's outcome `Batcher`, run in its
    /// task group): a push shows `sending` that
    /// much longer, and a crash in that time sends it again when its lease ends. Zero: each
    /// batch is recorded at once, before its loop goes on.
    public var outcomeLinger: Duration = .milliseconds(20)
    /// At a graceful stop, how long outcomes the store cannot take are still tried (the store
    /// is away): then they are given up, and their pushes are sent again when their leases end,
    /// as after a crash. Until the stop, a failing write is tried again for as long as it fails
    /// (`OutcomeWriteMachine`). 10 s: with the sends in flight (the APNs request timeout, 10 s),
    /// a stop stays within the 30 s systemd gives it (deploy/herald.service).
    public var outcomeDeadlineAtStop: Duration = .seconds(10)

    public init() {}
}

/// Drains the outbox into a `PushSender`: calls first, then messages by longest wait; follows the
/// provider's classification (retry until expiration, dead tokens cleared from their devices).
///
/// A network that cannot be reached (`PushOutcome.unreachable`) is held, not retried push by
/// push: its pushes go back to the queue without counting an attempt and stay there while one
/// probe at a time (`probeInterval`) checks for its return (`NetworkHealthMachine`); then every
/// loop drains its backlog at once, calls first, each push still expiring on time.
///
/// Run it under a `ServiceGroup`. On graceful shutdown it stops claiming, finishes the batches in
/// flight, and returns; `drained` then says how many that were. Each loop's decisions are a
/// `DispatchLoopMachine`; the loops, the recorder of finished outcomes and the follower of other
/// nodes' queues all run in the task group of `run()`.
///
/// Each push's final outcome is logged at info (`push finished`, with the push, device, app,
/// network, outcome, attempts and reason; never the token or the content).
public final class Dispatcher: Service, Sendable {
    let store: any OutboxStore
    private let sender: any PushSender
    let configuration: DispatcherConfiguration
    let logger: Logger
    /// The time pushes are due, claimed and completed by.
    let clock: any HeraldClock
    let signal = WakeSignal()
    /// Pushes this node's ingests handed over in memory, waiting for a loop.
    let handOffs: Mutex<HandOffQueue>
    /// Set when pushes may be queued in the store for this node to claim (an ingest left some
    /// queued, another node queued some, a retry or a requeue): the next loop to run claims.
    private let claimWanted = Atomic<Bool>(true)
    private let latency = Metrics.Timer(label: "herald_relay_push_latency_seconds")
    private let inFlightGauge = Gauge(label: "herald_relay_pushes_in_flight")
    private let inFlight = Atomic<Int>(0)
    /// Batches (and their pushes) between their claim and the record of their outcomes.
    private let batchesOut = Atomic<Int>(0)
    let pushesOut = Atomic<Int>(0)
    /// Final outcomes waiting to be recorded with other loops' (nil: recorded at once): a batch
    /// of them lingers up to `outcomeLinger` for the others, and at most one loop's batch of
    /// outcomes waits or is being written before the loops wait for the write (a store that
    /// cannot keep up holds the loops rather than memory, and a crash leaves at most that many
    /// finished pushes unrecorded). Only final outcomes wait: a push back in the queue or a
    /// token to clear is recorded at once, as other loops claim from what it writes.
    private let recorder: Batcher<CompletionBatch, Void>?
    /// Every outcome write, retried while the store fails; holds the claims meanwhile.
    let writer: OutcomeWriter
    private let drainReport = Mutex<DrainReport?>(nil)
    let completed = OutcomeCounters()
    let retries = Counter(label: "herald_relay_push_retries_total")
    let held = Counter(label: "herald_relay_pushes_held_total")
    /// When a retry was last logged (milliseconds): one warning a minute says why pushes wait.
    let lastRetryWarning = Atomic<Int64>(Int64.min)
    let health: Mutex<[PushNetwork: NetworkHealthMachine]>
    /// The claim span of each traced push (docs/tracing.md); off unless configured.
    let tracing: PushTracing
    private let healthGauges: [PushNetwork: Gauge] = Dictionary(
        uniqueKeysWithValues: PushNetwork.allCases.map {
            ($0, Gauge(label: "herald_relay_network_up", dimensions: [("network", $0.rawValue)]))
        }
    )

    public init(
        store: any OutboxStore,
        sender: any PushSender,
        configuration: DispatcherConfiguration = DispatcherConfiguration(),
        logger: Logger,
        clock: any HeraldClock = WallClock(),
        tracing: PushTracing = .off
    ) {
        self.tracing = tracing
        self.store = store
        self.sender = sender
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        let held = max(1, configuration.workers) * max(1, configuration.batchSize)
        self.handOffs = Mutex(HandOffQueue(capacity: max(0, min(configuration.handOffCapacity, held))))
        let writer = OutcomeWriter(store: store, logger: logger, clock: clock)
        self.writer = writer
        if configuration.outcomeLinger > .zero {
            // One batch's worth: enough to gather every loop's outcomes of the linger at full load,
            // and it bounds what a crash sends again to one batch more than the loops hold.
            let limit = max(1, configuration.batchSize)
            recorder = Batcher(
                rules: .init(
                    maxItems: .max,
                    weight: { $0.completions.count },
                    linger: configuration.outcomeLinger,
                    maxPending: limit
                )
            )
        } else {
            recorder = nil
        }
        let start = clock.now()
        let interval = configuration.probeInterval.milliseconds
        health = Mutex(
            Dictionary(
                uniqueKeysWithValues: PushNetwork.allCases.map {
                    ($0, NetworkHealthMachine(probeInterval: interval, now: start))
                }
            )
        )
        for gauge in healthGauges.values { gauge.record(1) }
    }

    /// Each network's health as the dispatcher sees it.
    public var networkHealth: [PushNetwork: NetworkHealthMachine.State] {
        health.withLock { $0.mapValues(\.state) }
    }

    /// Tells idle loops that new pushes are queued in the store.
    public func wake() {
        claimWanted.store(true, ordering: .releasing)
        signal.signal()
    }

    /// Pushes handed to the sender and not yet completed.
    public var pushesInFlight: Int { inFlight.load(ordering: .relaxed) }

    /// What a graceful shutdown waited for: the batches claimed when it began, each sent and its
    /// outcomes recorded before `run()` returned.
    public struct DrainReport: Sendable, Hashable {
        public var batches: Int
        public var pushes: Int
    }

    /// Set once graceful shutdown begins; nil before.
    public var drained: DrainReport? { drainReport.withLock { $0 } }

    public func run() async throws {
        do {
            let released = try await store.releaseClaims(owner: configuration.owner, now: clock.now())
            if released > 0 {
                logger.notice(
                    "re-queued pushes claimed before a restart",
                    metadata: ["count": .stringConvertible(released)]
                )
            }
        } catch {
            logger.error("cannot release earlier claims", metadata: ["error": "\(error)"])
        }
        // Only now: the release above would have put back pushes handed over before it.
        handOffs.withLock { $0.open() }
        await withTaskGroup(of: Void.self) { group in
            // Finished outcomes, written together; ends once the loops are done and it wrote what
            // they left (`finish` below). Not cancelled at graceful shutdown: the loops are.
            if let recorder {
                let writer = self.writer
                group.addTask { await recorder.run { await writer.write($0) } }
            }
            await withGracefulShutdownHandler {
                await cancelWhenGracefulShutdown {
                    await withTaskGroup(of: Void.self) { loops in
                        for _ in 0..<max(1, self.configuration.workers) {
                            loops.addTask { await self.loop() }
                        }
                        // Pushes other relay nodes queued wake these loops too; it ends with them,
                        // on graceful shutdown.
                        loops.addTask { await self.store.followQueuedElsewhere { self.wake() } }
                    }
                }
            } onGracefulShutdown: {
                let report = DrainReport(
                    batches: self.batchesOut.load(ordering: .relaxed),
                    pushes: self.pushesOut.load(ordering: .relaxed)
                )
                self.drainReport.withLock { $0 = report }
                // A store that is away must not hold the stop forever.
                self.writer.stop(within: self.configuration.outcomeDeadlineAtStop)
            }
            // The loops are done: what they finished is recorded before the claims could be
            // released (the group waits for the recorder's last write).
            recorder?.finish()
        }
        // Pushes handed over and not yet taken go back to the queue, for the next run or another
        // node, rather than wait out their lease.
        let left = handOffs.withLock { $0.close() }
        if !left.isEmpty { await Task { await self.putBack(left, reason: "the dispatcher stopped") }.value }
    }

    /// One loop: claims (or takes what ingests handed over), sends, hands the outcomes on, as its
    /// `DispatchLoopMachine` says; until its task is cancelled (graceful shutdown).
    private func loop() async {
        var machine = DispatchLoopMachine(
            configuration: .init(
                batchSize: configuration.batchSize,
                lease: configuration.lease.milliseconds,
                idlePoll: configuration.idlePoll.milliseconds
            )
        )
        // What the pass took and claimed, to send; and the stale hand-offs, to put back.
        var batch: [ClaimedPush] = []
        var stale: [ClaimedPush] = []
        var event = ready()
        while true {
            var next: DispatchLoopMachine.Event?
            for action in machine.handle(event) {
                switch action {
                case .stop:
                    return
                case .nextPass:
                    next = ready()
                case .waitForOutcomes(let timeout):
                    await writer.waitWhileHeld(timeout: .milliseconds(timeout))
                    next = .outcomesWaited
                case .takeHandedOver(let limit, let freshUntil):
                    (batch, stale) = handOffs.withLock { $0.take(limit, freshUntil: freshUntil) }
                    next = .tookHandedOver(fresh: batch.count, stale: stale.count)
                case .putBackStale:
                    let late = stale
                    stale = []
                    // Not cut short by the loop's cancellation (an awaited task, ending with it).
                    await Task { await self.putBack(late, reason: "not sent within half its lease") }.value
                    next = .putBack
                case .claim(let limit, let time):
                    let (taken, full, failed) = await claimQueued(limit: limit, at: time)
                    batch += taken
                    next = failed ? .claimFailed(count: taken.count) : .claimed(count: taken.count, full: full)
                case .wakeAnother:
                    claimWanted.store(true, ordering: .releasing)
                    signal.signal()
                case .findNextDue:
                    next = .nextDue(in: await nextDue())
                case .sleep(let until):
                    let signalled = await signal.wait(timeout: .milliseconds(max(1, until - clock.now())))
                    next = .woke(signalled: signalled)
                case .send:
                    // Handed-over pushes left for another loop.
                    if !handOffs.withLock({ $0.isEmpty }) { signal.signal() }
                    let sending = batch
                    batch = []
                    batchesOut.add(1, ordering: .relaxed)
                    pushesOut.add(sending.count, ordering: .relaxed)
                    // Once claimed, a batch is sent and completed even if shutdown begins
                    // meanwhile: an awaited task, not cancelled with the loop, that ends with it.
                    await Task { await self.deliver(sending) }.value
                    batchesOut.subtract(1, ordering: .relaxed)
                    pushesOut.subtract(sending.count, ordering: .relaxed)
                    next = .sent
                }
            }
            guard let next else { preconditionFailure("the dispatch loop's actions reported nothing") }
            event = next
        }
    }

    /// A pass's start: the claim wanted is read (and cleared) only when outcomes do not hold the
    /// claims, so a loop that only waits takes it from none that would claim.
    private func ready() -> DispatchLoopMachine.Event {
        let stopping = Task.isCancelled
        let held = writer.holdsClaims
        let wanted = !stopping && !held && claimWanted.exchange(false, ordering: .acquiringAndReleasing)
        return .ready(now: clock.now(), claimWanted: wanted, outcomesHeld: held, stopping: stopping)
    }

    /// Claims up to `limit` due pushes through the networks that answer, and a probe for each
    /// network due one; answers them, whether the claim filled its limit (more may be waiting),
    /// and whether it failed.
    private func claimQueued(limit: Int, at time: Int64) async -> (claimed: [ClaimedPush], full: Bool, failed: Bool) {
        let (healthy, probes) = health.withLock { machines -> (Set<PushNetwork>, [PushNetwork]) in
            var healthy: Set<PushNetwork> = []
            var probes: [PushNetwork] = []
            for network in PushNetwork.allCases {
                if machines[network]!.isHealthy {
                    healthy.insert(network)
                } else if machines[network]!.startProbe(at: time) {
                    probes.append(network)
                }
            }
            return (healthy, probes)
        }
        var claimed: [ClaimedPush] = []
        var full = false
        do {
            let leaseUntil = time + configuration.lease.milliseconds
            if !healthy.isEmpty, limit > 0 {
                claimed = try await store.claim(
                    limit: limit,
                    owner: configuration.owner,
                    now: time,
                    leaseUntil: leaseUntil,
                    networks: healthy
                )
                full = claimed.count >= limit
            } else if !healthy.isEmpty {
                // A full batch handed over: claim on the next pass.
                full = true
            }
            for network in probes {
                let probe = try await store.claim(
                    limit: 1,
                    owner: configuration.owner,
                    now: time,
                    leaseUntil: leaseUntil,
                    networks: [network]
                )
                if probe.isEmpty {
                    _ = health.withLock { $0[network]!.handle(.nothingToProbe(at: time)) }
                }
                claimed += probe
            }
        } catch {
            logger.error("cannot claim pushes", metadata: ["error": "\(error)"])
            // A probe taken but not sent must not hold its network's probes forever.
            health.withLock { machines in
                for network in probes { _ = machines[network]!.handle(.nothingToProbe(at: time)) }
            }
            return (claimed, false, true)
        }
        return (claimed, full, false)
    }

    /// Until the next retry is due, in milliseconds (the machine keeps it within the idle poll);
    /// nil when unknown. While a network is down, until its next probe instead: its queued pushes
    /// are due but not claimed, and would make the store's next due time always now.
    private func nextDue() async -> Int64? {
        let time = clock.now()
        let (down, probe) = health.withLock { machines in
            (machines.values.contains { !$0.isHealthy }, machines.values.compactMap(\.nextProbeAt).min())
        }
        // No probe time: one is out; the idle poll.
        if down { return probe.map { $0 - time } }
        guard let due = try? await store.nextDueTime() else { return nil }
        return due - clock.now()
    }

    private func deliver(_ claimed: [ClaimedPush]) async {
        let pushes = tracing.isOn ? claimed.map(traced) : claimed.map(\.push)
        let sentAt = clock.now()
        inFlightGauge.record(inFlight.add(claimed.count, ordering: .relaxed).newValue)
        let outcomes = await sender.send(pushes)
        inFlightGauge.record(inFlight.subtract(claimed.count, ordering: .relaxed).newValue)
        let time = clock.now()
        var completions: [PushCompletion] = []
        completions.reserveCapacity(claimed.count)
        // Per network: whether it answered any push of the batch, and why it did not if none.
        var answered: Set<PushNetwork> = []
        var unreachable: [PushNetwork: String] = [:]
        for (index, item) in claimed.enumerated() {
            let outcome = index < outcomes.count ? outcomes[index] : .retryLater(reason: "no answer from the provider")
            completions.append(completion(for: item, outcome: outcome, at: time))
            switch outcome {
            case .delivered:
                latency.recordMilliseconds(time - item.entry.createdAt)
                answered.insert(item.entry.network)
            case .tokenDead, .failed, .retryLater:
                answered.insert(item.entry.network)
            case .unreachable(let reason):
                unreachable[item.entry.network] = reason
            case .expired:
                break
            }
        }
        for network in Set(claimed.map(\.entry.network)) {
            // A network neither answered nor unreachable (every push expired on the way) taught
            // nothing, but a probe among them is over: the next one goes after the interval.
            let event: NetworkHealthMachine.Event =
                if answered.contains(network) {
                    .answered(sentAt: sentAt, at: time)
                } else if let reason = unreachable[network] {
                    .unreachable(sentAt: sentAt, at: time, reason: reason)
                } else {
                    .nothingToProbe(at: time)
                }
            let action = health.withLock { $0[network]!.handle(event) }
            switch action {
            case .wentDown(let reason):
                healthGauges[network]?.record(0)
                logger.warning(
                    "push network unreachable: holding its pushes until it answers again",
                    metadata: ["network": "\(network.rawValue)", "reason": "\(reason)"]
                )
            case .cameBack(let downFor):
                healthGauges[network]?.record(1)
                logger.info(
                    "push network answers again: draining its pushes",
                    metadata: ["network": "\(network.rawValue)", "down_ms": .stringConvertible(downFor)]
                )
                claimWanted.store(true, ordering: .releasing)
                signal.signalAll()
            case nil:
                break
            }
        }
        writer.hand(completions.count)
        if let recorder, completions.allSatisfy(\.onlyFinishes) {
            guard !completions.isEmpty else { return }
            await recorder.enqueue(CompletionBatch(completions: completions, now: time))
            return
        }
        await writer.write([CompletionBatch(completions: completions, now: time)])
        // Pushes back in the queue are claimed again when due: the next loop to run claims, and
        // learns when the next one is due.
        if completions.contains(where: { if case .finish = $0.disposition { false } else { true } }) {
            claimWanted.store(true, ordering: .releasing)
        }
    }
}
