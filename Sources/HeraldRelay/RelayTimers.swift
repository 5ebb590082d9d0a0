import HeraldBatching
import HeraldDomain
public import ServiceLifecycle
import Synchronization

/// The relay's timers, kept in one `DeadlineTable` and fired by one service: a chat's delayed
/// first push to a device, and a live channel's acknowledgement deadline for a message.
///
/// Thousands may be armed at once (a message sent live to every foreground app arms one each);
/// one loop sleeps until the earliest deadline on the relay's clock (`Relay`'s `sleep`, which
/// tests move by hand), wakes sooner when a timer with an earlier one is armed, and runs the
/// actions that came due as child tasks of its own. Nothing fires while the service does not run.
///
/// On graceful shutdown it stops after the API (whose live channels settle their messages on
/// closing) and before the dispatcher: it fires what is due then and drops the rest, and returns
/// once the fired actions finished. A dropped first push is armed again by the next start (or by
/// another node's sweep) from the disconnect the store keeps.
public final class RelayTimers: Service, Sendable {
    /// What a timer is for.
    enum Timer: Hashable, Sendable {
        /// The first push of a chat's agent lines to a device that left the chat.
        case firstPush(conversation: String, deviceID: String)
        /// A message sent over a live channel, not acknowledged yet.
        case acknowledgement(deviceID: String, messageID: String)
    }

    typealias Action = @Sendable () async -> Void

    private struct State {
        var table = DeadlineTable<Timer>()
        var actions: [Timer: Action] = [:]
    }

    private let state = Mutex(State())
    private let wake = WakeSignal()
    private let clock: any HeraldClock

    /// Timers on `clock`: the relay's, which tests move.
    init(clock: any HeraldClock) {
        self.clock = clock
    }

    /// How many timers are armed.
    public var armed: Int { state.withLock { $0.table.count } }

    /// Arms `timer` to run `action` at `deadline` (milliseconds since the epoch), unless it is
    /// armed already (it keeps its deadline and action); answers whether it was armed now.
    @discardableResult
    func schedule(_ timer: Timer, at deadline: Int64, _ action: @escaping Action) -> Bool {
        let scheduled = state.withLock { state -> DeadlineTable<Timer>.Scheduled in
            let scheduled = state.table.schedule(timer, at: deadline)
            if case .armed = scheduled { state.actions[timer] = action }
            return scheduled
        }
        if case .armed(wakeSooner: true) = scheduled { wake.signal() }
        return scheduled != .kept
    }

    /// Disarms `timer`: its action will not run.
    func cancel(_ timer: Timer) {
        state.withLock { state in
            state.table.cancel(timer)
            state.actions[timer] = nil
        }
    }

    /// Whether `timer` is armed.
    func isArmed(_ timer: Timer) -> Bool {
        state.withLock { $0.table.deadline(of: timer) != nil }
    }

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                let (actions, next) = takeDue()
                for action in actions { group.addTask { await action() } }
                await cancelWhenGracefulShutdown { await self.wait(until: next) }
            }
            // What came due by the stop still runs; the rest is dropped.
            for action in takeDue().actions { group.addTask { await action() } }
        }
    }

    /// Disarms the timers due now; answers their actions and the next deadline.
    private func takeDue() -> (actions: [Action], next: Int64?) {
        let time = clock.now()
        return state.withLock { state in
            let due = state.table.fireDue(at: time)
            return (due.keys.compactMap { state.actions.removeValue(forKey: $0) }, due.nextWake)
        }
    }

    /// Returns at `deadline` on the relay's clock, when a sooner timer is armed, or on
    /// cancellation. With no deadline, the loop looks again hourly (only a schedule wakes it).
    private func wait(until deadline: Int64?) async {
        let idle = Duration.seconds(3600)
        guard let deadline else {
            await wake.wait(timeout: idle)
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await self.clock.sleep(until: deadline) }
            group.addTask { await self.wake.wait(timeout: idle) }
            await group.next()
            group.cancelAll()
        }
    }
}
