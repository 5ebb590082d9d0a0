public import HeraldDomain
public import HeraldPush
import Synchronization

/// A `PushSender` that answers from a script instead of a network, and records every call with
/// the time it came: for testing what the dispatcher does with each outcome, without a network.
///
/// A test can close the sender's gate to keep the next batches in flight until it opens it again,
/// and wait for the n-th call instead of sleeping.
public final class ScriptedPushSender: PushSender {
    /// How the sender answers.
    public enum Script: Sendable {
        /// One answer per push in the order the pushes come, across calls.
        case inOrder([PushOutcome])
        /// Each push id's answers, one per attempt at that push.
        case perPush([String: [PushOutcome]])
    }

    /// One call to `send(_:)`.
    public struct Call: Sendable, Hashable {
        /// The pushes, as the sender got them.
        public var pushes: [Push]
        /// What the sender answered, one per push.
        public var outcomes: [PushOutcome]
        /// The clock's time when the call came.
        public var at: Int64

        /// The pushes' ids, in order.
        public var pushIDs: [String] { pushes.map(\.id) }
    }

    private struct State {
        var inOrder: [PushOutcome]
        var perPush: [String: [PushOutcome]]
        var gateClosed = false
        var held: [CheckedContinuation<Void, Never>] = []
        var unreachable: [PushNetwork: String] = [:]
    }

    private let state: Mutex<State>
    private let recorded = Recorded<Call>()
    private let otherwise: PushOutcome
    private let clock: any HeraldClock

    /// A sender answering from `script`; a push the script has no answer left for gets `otherwise`.
    /// `clock` (the test's) stamps each call.
    public init(
        _ script: Script,
        otherwise: PushOutcome = .delivered(receipt: nil),
        clock: any HeraldClock
    ) {
        switch script {
        case .inOrder(let outcomes): state = Mutex(State(inOrder: outcomes, perPush: [:]))
        case .perPush(let outcomes): state = Mutex(State(inOrder: [], perPush: outcomes))
        }
        self.otherwise = otherwise
        self.clock = clock
    }

    /// Every call so far, in the order they came (held ones included).
    public var calls: [Call] { recorded.all }

    /// The ids of every push sent so far, in order, a push once per attempt.
    public var sentIDs: [String] { calls.flatMap(\.pushIDs) }

    /// Plays an outage of `network`: from now on each of its pushes answers
    /// `.unreachable(reason:)`, leaving the script untouched, until `setReachable(_:)`.
    public func setUnreachable(_ network: PushNetwork, reason: String = "cannot connect: connection refused") {
        state.withLock { $0.unreachable[network] = reason }
    }

    /// Ends the outage of `network`: its pushes answer from the script again.
    public func setReachable(_ network: PushNetwork) {
        state.withLock { $0.unreachable[network] = nil }
    }

    /// Holds the calls that come from now on until `openGate()`. A held call is recorded (and its
    /// answers chosen) when it comes.
    public func closeGate() {
        state.withLock { $0.gateClosed = true }
    }

    /// Lets held calls answer, and later ones go straight through.
    public func openGate() {
        let held = state.withLock { state in
            state.gateClosed = false
            defer { state.held = [] }
            return state.held
        }
        for call in held { call.resume() }
    }

    /// Returns once at least `count` calls have come (held ones included), with the calls so far;
    /// returns early if the task is cancelled.
    @discardableResult
    public func waitForCalls(_ count: Int) async -> [Call] {
        await recorded.wait(forCount: count)
    }

    public func send(_ pushes: [Push]) async -> [PushOutcome] {
        let time = clock.now()
        let (outcomes, hold) = state.withLock { state in
            var outcomes: [PushOutcome] = []
            outcomes.reserveCapacity(pushes.count)
            for push in pushes {
                if let reason = state.unreachable[push.network] {
                    outcomes.append(.unreachable(reason: reason))
                } else if !state.inOrder.isEmpty {
                    outcomes.append(state.inOrder.removeFirst())
                } else if let next = state.perPush[push.id]?.first {
                    state.perPush[push.id]?.removeFirst()
                    outcomes.append(next)
                } else {
                    outcomes.append(otherwise)
                }
            }
            return (outcomes, state.gateClosed)
        }
        recorded.append(contentsOf: [Call(pushes: pushes, outcomes: outcomes, at: time)])
        if hold {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if !state.gateClosed { return true }
                    state.held.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
        return outcomes
    }
}
