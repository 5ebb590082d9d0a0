import HeraldSimulation
import HeraldTestSupport
import Logging
import ServiceLifecycle
import Testing

@testable import HeraldRelay

/// `DeadlineTable`, the rules of the relay's timers as data (no clock, no task), and `RelayTimers`,
/// the one service that fires them on the relay's clock.
@Suite("Relay timers")
struct RelayTimersTests {
    enum Step: Sendable {
        case schedule(String, at: Int64)
        case cancel(String)
        case fire(at: Int64)
    }

    enum Answer: Equatable, Sendable {
        case scheduled(DeadlineTable<String>.Scheduled)
        case cancelled(Bool)
        case fired([String], next: Int64?)

        static let armedSooner = Answer.scheduled(.armed(wakeSooner: true))
        static let armedLater = Answer.scheduled(.armed(wakeSooner: false))
    }

    @Test(
        "the deadline table: what each step answers, and when to wake next",
        arguments: [
            // A lone timer: it wakes the sleeper; nothing is due before its deadline, it is at it.
            [
                (Step.schedule("a", at: 100), Answer.armedSooner), (.fire(at: 99), .fired([], next: 100)),
                (.fire(at: 100), .fired(["a"], next: nil)),
            ],
            // A later timer leaves the sleeper be; a sooner one wakes it. All due fire in deadline order.
            [
                (.schedule("a", at: 100), .armedSooner), (.schedule("b", at: 200), .armedLater),
                (.schedule("c", at: 50), .armedSooner), (.fire(at: 300), .fired(["c", "a", "b"], next: nil)),
            ],
            // Armed again before it fired: it keeps its deadline.
            [
                (.schedule("a", at: 100), .armedSooner), (.schedule("a", at: 50), .scheduled(.kept)),
                (.fire(at: 50), .fired([], next: 100)), (.fire(at: 100), .fired(["a"], next: nil)),
            ],
            // A cancelled timer never fires, and no longer sets the next wake; a second cancel finds none.
            [
                (.schedule("a", at: 100), .armedSooner), (.schedule("b", at: 200), .armedLater),
                (.cancel("a"), .cancelled(true)), (.cancel("a"), .cancelled(false)),
                (.fire(at: 150), .fired([], next: 200)), (.fire(at: 200), .fired(["b"], next: nil)),
            ],
            // With the earliest cancelled, a timer before the next one left wakes the sleeper.
            [
                (.schedule("a", at: 100), .armedSooner), (.schedule("b", at: 200), .armedLater),
                (.cancel("a"), .cancelled(true)), (.schedule("c", at: 150), .armedSooner),
                (.fire(at: 1_000), .fired(["c", "b"], next: nil)),
            ],
            // Equal deadlines fire in the order they were scheduled.
            [
                (.schedule("b", at: 100), .armedSooner), (.schedule("a", at: 100), .armedLater),
                (.schedule("c", at: 100), .armedLater), (.fire(at: 100), .fired(["b", "a", "c"], next: nil)),
            ],
            // A key fired, or cancelled, is armed afresh with its new deadline.
            [
                (.schedule("a", at: 100), .armedSooner), (.fire(at: 100), .fired(["a"], next: nil)),
                (.schedule("a", at: 300), .armedSooner), (.cancel("a"), .cancelled(true)),
                (.schedule("a", at: 400), .armedSooner), (.fire(at: 350), .fired([], next: 400)),
                (.fire(at: 400), .fired(["a"], next: nil)),
            ],
            // Nothing armed: nothing fires, no wake.
            [(.fire(at: 0), .fired([], next: nil)), (.cancel("a"), .cancelled(false))],
        ] as [[(Step, Answer)]]
    )
    func table(_ steps: [(Step, Answer)]) {
        var table = DeadlineTable<String>()
        for (step, expected) in steps {
            let answer: Answer
            switch step {
            case .schedule(let key, let deadline): answer = .scheduled(table.schedule(key, at: deadline))
            case .cancel(let key): answer = .cancelled(table.cancel(key))
            case .fire(let now):
                let due = table.fireDue(at: now)
                answer = .fired(due.keys, next: due.nextWake)
            }
            #expect(answer == expected, "\(step)")
        }
    }

    @Test("thousands of timers cancelled long before their deadline: the table keeps only the armed ones")
    func manyCancelled() {
        var table = DeadlineTable<Int>()
        for key in 0..<5_000 { _ = table.schedule(key, at: Int64(10_000 + key)) }
        for key in 0..<5_000 where key != 4_321 { table.cancel(key) }
        #expect(table.count == 1 && table.nextWake == 14_321 && table.deadline(of: 4_321) == 14_321)
        #expect(table.fireDue(at: 14_320) == .init(keys: [], nextWake: 14_321))
        #expect(table.fireDue(at: 20_000) == .init(keys: [4_321], nextWake: nil))
    }

    /// Timers on a test clock that moves only when the test moves it, and the time it reads.
    static func onFrozenClock() -> (TestClock, Int64, RelayTimers) {
        let clock = TestClock()
        clock.freeze()
        return (clock, clock.now(), RelayTimers(clock: clock))
    }

    static func firstPush(_ device: String) -> RelayTimers.Timer {
        .firstPush(conversation: "c-1", deviceID: device)
    }

    @Test("the service fires on the relay's clock, wakes sooner for an earlier timer, and drops a cancelled one")
    func firesOnTheRelaysClock() async throws {
        let (clock, start, timers) = Self.onFrozenClock()
        let fired = Recorded<String>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await timers.run() }
            timers.schedule(Self.firstPush("late"), at: start + 1_000) { fired.append(contentsOf: ["late"]) }
            timers.schedule(Self.firstPush("gone"), at: start + 500) { fired.append(contentsOf: ["gone"]) }
            #expect(!timers.schedule(Self.firstPush("late"), at: start + 1) { fired.append(contentsOf: ["again"]) })
            try await eventually("the loop asleep") { clock.sleepers == 1 }
            // Armed while the loop sleeps until a later deadline: it wakes, and sleeps until this one.
            timers.schedule(Self.firstPush("soon"), at: start + 10) { fired.append(contentsOf: ["soon"]) }
            timers.cancel(Self.firstPush("gone"))
            clock.advance(by: .milliseconds(10))
            #expect(await fired.wait(forCount: 1) == ["soon"])
            #expect(timers.armed == 1 && timers.isArmed(Self.firstPush("late")))
            clock.advance(by: .milliseconds(990))
            #expect(await fired.wait(forCount: 2) == ["soon", "late"])
            #expect(timers.armed == 0)
            group.cancelAll()
        }
        #expect(fired.all == ["soon", "late"])
    }

    @Test("a graceful shutdown fires what is due by then, waits for it, and drops what is not")
    func gracefulShutdown() async throws {
        let (clock, start, timers) = Self.onFrozenClock()
        let fired = Recorded<String>()
        let group = ServiceGroup(services: [timers], logger: Logger(label: "test.timers"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            timers.schedule(Self.firstPush("due"), at: start + 100) {
                // Still running when the shutdown begins: the service waits for it.
                await fired.wait(forCount: 1)
                fired.append(contentsOf: ["due, finished"])
            }
            timers.schedule(Self.firstPush("later"), at: start + 200) { fired.append(contentsOf: ["later"]) }
            try await eventually("the loop asleep") { clock.sleepers == 1 }
            clock.advance(by: .milliseconds(100))
            try await eventually("the due timer fired") { timers.armed == 1 }
            await group.triggerGracefulShutdown()
            fired.append(contentsOf: ["shutdown"])
            try await tasks.waitForAll()
        }
        #expect(fired.all == ["shutdown", "due, finished"])
        #expect(timers.armed == 1, "the later timer is dropped with the service, unfired")
    }
}
