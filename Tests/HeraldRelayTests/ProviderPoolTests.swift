import HeraldPush
import HeraldRelayProvider
import HeraldSimulation
import HeraldTestSupport
import Logging
import Testing

/// Several `herald provider`s behind `herald relay`: batches in turn, and past one that gives no
/// answer at once.
@Suite("Provider pool")
struct ProviderPoolTests {
    static func pushes(_ count: Int) -> [Push] {
        (0..<count).map { index in
            Push(
                id: "p\(index)",
                token: "t\(index)",
                payload: .apns(
                    APNsPayload(
                        topic: "com.example.chat",
                        type: .alert,
                        priority: .immediate,
                        apnsID: "p\(index)",
                        json: "{}"
                    )
                ),
                expiration: nil
            )
        }
    }

    @Test("batches go to each provider in turn")
    func roundRobin() async {
        let first = ScriptedPushSender(.inOrder([]), clock: TestClock(frozenAt: 0))
        let second = ScriptedPushSender(.inOrder([]), clock: TestClock(frozenAt: 0))
        let pool = ProviderPool([("a", first), ("b", second)], logger: Logger(label: "test"))
        for _ in 0..<4 {
            let outcomes = await pool.send(Self.pushes(2))
            #expect(outcomes.allSatisfy { if case .delivered = $0 { true } else { false } })
        }
        #expect(first.calls.count == 2)
        #expect(second.calls.count == 2)
    }

    @Test("a provider that gives no answer is skipped: its batch goes to the next at once, and later batches too")
    func failover() async {
        let dead = ScriptedPushSender(.inOrder([]), clock: TestClock(frozenAt: 0))
        dead.setUnreachable(.apns)
        let alive = ScriptedPushSender(.inOrder([]), clock: TestClock(frozenAt: 0))
        let pool = ProviderPool(
            [("dead", dead), ("alive", alive)],
            cooldown: .seconds(60),
            logger: Logger(label: "test")
        )
        for _ in 0..<5 {
            let outcomes = await pool.send(Self.pushes(3))
            #expect(outcomes.count == 3)
            #expect(outcomes.allSatisfy { if case .delivered = $0 { true } else { false } })
        }
        // Asked once, then rested through the cooldown.
        #expect(dead.calls.count == 1)
        #expect(alive.calls.count == 5)
    }

    @Test("when every provider gives no answer the batch is unreachable, for the dispatcher to hold")
    func allDown() async {
        let first = ScriptedPushSender(.inOrder([]), clock: TestClock(frozenAt: 0))
        let second = ScriptedPushSender(.inOrder([]), clock: TestClock(frozenAt: 0))
        first.setUnreachable(.apns)
        second.setUnreachable(.apns)
        let pool = ProviderPool([("a", first), ("b", second)], logger: Logger(label: "test"))
        let outcomes = await pool.send(Self.pushes(2))
        #expect(outcomes.allSatisfy { if case .unreachable = $0 { true } else { false } })
        // Once back, the provider answers again.
        second.setReachable(.apns)
        let later = await pool.send(Self.pushes(2))
        #expect(later.allSatisfy { if case .delivered = $0 { true } else { false } })
    }

    @Test("rotation: the healthy in turn first, then the resting by the end of their rest")
    func rotationOrder() {
        var rotation = ProviderRotation(count: 3, cooldown: .seconds(10))
        let now = ContinuousClock.now
        #expect(rotation.order(at: now) == [0, 1, 2])
        #expect(rotation.order(at: now) == [1, 2, 0])
        rotation.unreachable(0, at: now)
        rotation.unreachable(2, at: now + .seconds(1))
        #expect(rotation.order(at: now) == [1, 0, 2])
        #expect(rotation.order(at: now + .seconds(11)) == [0, 1, 2])
        rotation.answered(2)
        #expect(rotation.order(at: now) == [1, 2, 0])
    }
}
