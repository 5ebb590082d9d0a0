/// One dispatcher loop's decisions, as a state machine: events in, actions out, no I/O (the
/// `Dispatcher` claims, sends, puts back, sleeps and wakes; this says which, when and how much).
///
/// A pass of the loop:
///
/// - Stopping (the loop's task is cancelled: graceful shutdown): stop. A batch already taken is
///   sent and recorded first; the check comes between passes.
/// - Outcomes the store would not take hold the claims (`OutcomeWriteMachine`): wait for them
///   (at most an idle poll), then claim whatever the poll or a wake would have.
/// - Otherwise the loop claims from the store when asked to (a wake: pushes queued, a retry or
///   a requeue written, a network back, a full claim elsewhere), when its idle wait ran out, or
///   when its next claim time came. Pushes its node handed over in memory are taken first: a
///   whole batch when it does not claim, at most half a batch when it does, so neither starves
///   the other. Handed-over pushes with less than half their lease left are put back in the
///   queue, not sent late.
/// - A claim that fills its limit asks another loop to claim while this one sends. One that does
///   not asks when the next push is due (or a down network's next probe): the loop claims again
///   then at the latest, and within an idle poll. A failed claim tries again after an idle poll.
/// - Something to send: send it, then the next pass. Nothing: sleep until the next claim time or
///   a wake.
///
/// Times are in milliseconds since the epoch; durations in milliseconds.
public struct DispatchLoopMachine: Sendable, Hashable {
    public struct Configuration: Sendable, Hashable {
        /// The most pushes one pass sends.
        public var batchSize: Int
        /// How long a claim holds.
        public var lease: Int64
        /// How long an idle loop sleeps at most, and waits before a failed claim is tried again.
        public var idlePoll: Int64

        public init(batchSize: Int, lease: Int64, idlePoll: Int64) {
            self.batchSize = max(1, batchSize)
            self.lease = lease
            self.idlePoll = idlePoll
        }
    }

    /// What happened.
    public enum Event: Sendable, Hashable {
        /// A pass begins at `now`. `claimWanted`: a claim was asked for since a loop last read it
        /// (read, and cleared, only when outcomes do not hold the claims); `outcomesHeld`: outcome
        /// writes failed and what they hold is not all written; `stopping`: the loop must end.
        case ready(now: Int64, claimWanted: Bool, outcomesHeld: Bool, stopping: Bool)
        /// The wait for held outcomes ended (written, or the wait timed out).
        case outcomesWaited
        /// Handed-over pushes were taken: `fresh` to send, `stale` (less than half their lease
        /// left) to put back.
        case tookHandedOver(fresh: Int, stale: Int)
        /// The stale pushes are back in the queue (or, the store failing, left to their lease).
        case putBack
        /// The claim took `count` pushes (probes included); `full`: it filled its limit, so more
        /// may wait.
        case claimed(count: Int, full: Bool)
        /// The claim failed, after taking `count` pushes (probes claimed before the failure).
        case claimFailed(count: Int)
        /// When to claim next: in `wait` (the next due push, a down network's next probe), nil
        /// when unknown.
        case nextDue(in: Int64?)
        /// The sleep ended: woken by a signal (or cancelled), or timed out.
        case woke(signalled: Bool)
        /// The batch was sent and its outcomes handed on.
        case sent
    }

    /// What the loop must do, in order. Each event's actions end with exactly one that reports
    /// the next event (all but `wakeAnother`).
    public enum Action: Sendable, Hashable {
        /// Begin the next pass: report `.ready`.
        case nextPass
        /// Wait until held outcomes are written, at most `timeout`; report `.outcomesWaited`.
        case waitForOutcomes(timeout: Int64)
        /// Take up to `limit` handed-over pushes; those whose lease ends before `freshUntil` are
        /// stale. Report `.tookHandedOver`.
        case takeHandedOver(limit: Int, freshUntil: Int64)
        /// Put the stale pushes back in the queue, due now; report `.putBack`.
        case putBackStale
        /// Claim up to `limit` due pushes at `at` through the networks that answer, and a probe
        /// for each network due one; report `.claimed` or `.claimFailed`.
        case claim(limit: Int, at: Int64)
        /// Ask another loop to claim (set the claim wanted, signal one loop).
        case wakeAnother
        /// Find when the next push is due (or a down network's next probe); report `.nextDue`.
        case findNextDue
        /// Sleep until `until` or a signal; report `.woke`.
        case sleep(until: Int64)
        /// Send what was taken and claimed, and hand on its outcomes; report `.sent`.
        case send
        /// End the loop.
        case stop
    }

    /// Where the pass is.
    public enum Phase: Sendable, Hashable {
        /// Between passes.
        case idle
        case waitingForOutcomes
        /// Taking handed-over pushes in the pass begun at `at`; `claim`: whether it claims too.
        case takingHandedOver(at: Int64, claim: Bool)
        case puttingBack(at: Int64, claim: Bool, handed: Int)
        case claiming(at: Int64, handed: Int)
        case findingNextDue(at: Int64, taken: Int)
        case sleeping
        case sending
        case stopped
    }

    public let configuration: Configuration
    public private(set) var phase: Phase = .idle
    /// When the loop claims next at the latest; the first pass claims what was queued before the
    /// start.
    public private(set) var claimAt = Int64.min
    /// The last sleep or wait for outcomes ran out: the next pass claims, whatever the clock says
    /// (a test's clock may stand still).
    public private(set) var timedOut = false

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch (phase, event) {
        case (.idle, .ready(let now, let claimWanted, let outcomesHeld, let stopping)):
            if stopping {
                phase = .stopped
                return [.stop]
            }
            if outcomesHeld {
                // Claim nothing until they are written, or a push whose lease lapsed meanwhile
                // could be claimed and sent again before its outcome is recorded.
                phase = .waitingForOutcomes
                return [.waitForOutcomes(timeout: configuration.idlePoll)]
            }
            let claim = claimWanted || now >= claimAt || timedOut
            timedOut = false
            phase = .takingHandedOver(at: now, claim: claim)
            let batch = configuration.batchSize
            return [.takeHandedOver(limit: claim ? batch / 2 : batch, freshUntil: now + configuration.lease / 2)]

        case (.waitingForOutcomes, .outcomesWaited):
            // Then claim at once: pushes queued meanwhile.
            timedOut = true
            phase = .idle
            return [.nextPass]

        case (.takingHandedOver(let at, let claim), .tookHandedOver(let fresh, let stale)):
            if stale > 0 {
                phase = .puttingBack(at: at, claim: claim, handed: fresh)
                return [.putBackStale]
            }
            return afterHandOver(at: at, claim: claim, handed: fresh)

        case (.puttingBack(let at, let claim, let handed), .putBack):
            return afterHandOver(at: at, claim: claim, handed: handed)

        case (.claiming(let at, let handed), .claimed(let count, let full)):
            if full {
                // More may be waiting: another loop claims while this one sends.
                return [.wakeAnother] + sendOrSleep(handed + count)
            }
            phase = .findingNextDue(at: at, taken: handed + count)
            return [.findNextDue]

        case (.claiming(let at, let handed), .claimFailed(let count)):
            claimAt = at + configuration.idlePoll
            return sendOrSleep(handed + count)

        case (.findingNextDue(let at, let taken), .nextDue(let wait)):
            claimAt = at + min(wait.map { max(1, $0) } ?? configuration.idlePoll, configuration.idlePoll)
            return sendOrSleep(taken)

        case (.sleeping, .woke(let signalled)):
            timedOut = !signalled
            phase = .idle
            return [.nextPass]

        case (.sending, .sent):
            phase = .idle
            return [.nextPass]

        default:
            preconditionFailure("dispatch loop: \(event) in phase \(phase)")
        }
    }

    private mutating func afterHandOver(at: Int64, claim: Bool, handed: Int) -> [Action] {
        guard claim else { return sendOrSleep(handed) }
        phase = .claiming(at: at, handed: handed)
        return [.claim(limit: configuration.batchSize - handed, at: at)]
    }

    private mutating func sendOrSleep(_ taken: Int) -> [Action] {
        if taken == 0 {
            phase = .sleeping
            return [.sleep(until: claimAt)]
        }
        phase = .sending
        return [.send]
    }
}
