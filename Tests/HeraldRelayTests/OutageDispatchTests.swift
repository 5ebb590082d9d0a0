import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldDispatch

/// What the dispatcher does while a push network cannot be reached, over the real SQLite store
/// with a scripted sender and a manual clock: the pushes wait behind the network's health, not
/// each on its own backoff, and drain at once, calls first, when it answers again.
@Suite(.timeLimit(.minutes(2)))
struct OutageDispatchTests {
    static let start = DispatcherTests.start

    @Test(
        "an unreachable network holds its pushes without counting attempts, probes with one call at a time, and drains calls first on its return"
    )
    func outageHoldsThenDrainsCallsFirst() async throws {
        let s = Self.start
        let pushes = [
            DispatcherTests.push("m0", at: s - 50), DispatcherTests.push("m1", at: s - 40),
            DispatcherTests.push("m2", at: s - 30),
            DispatcherTests.push("c0", kind: .call, at: s - 20, expires: s + 30_000),
            // Expires during the outage: never sent after that, finished when claimed.
            DispatcherTests.push("c-short", kind: .call, at: s - 10, expires: s + 600),
            DispatcherTests.push("c1", kind: .call, at: s - 5, expires: s + 30_000),
        ]
        let ids = ["c0", "c-short", "c1", "m0", "m1", "m2"]
        try await Rig.with(.inOrder([]), pushes: pushes, unreachable: .apns) { (rig: Rig) async throws in
            // The first batch meets the outage: every push goes back to the queue due at once,
            // its attempt not counted, and the network is down.
            let first = await rig.store.waitForCompletions(6)
            #expect(rig.sender.calls.first?.pushIDs == ids)
            #expect(first.allSatisfy { $0.disposition == .requeue(at: s) }, "\(first)")
            for id in ids {
                let entry = try #require(try await rig.sqlite.push(id: id))
                #expect(entry.state == .queued && entry.attempts == 0 && entry.nextAttemptAt == s, "\(id): \(entry)")
            }
            #expect(rig.dispatcher.networkHealth[.apns] == .down(since: s, nextProbeAt: s + 250, probing: false))
            #expect(rig.dispatcher.networkHealth[.fcm] == .healthy(since: s))

            // While down: one push per probe interval, the first call, and nothing else.
            for round in 1...3 {
                rig.clock.advance(by: .milliseconds(250))
                rig.dispatcher.wake()
                let calls = await rig.sender.waitForCalls(1 + round)
                #expect(calls.last?.pushIDs == ["c0"], "probe \(round)")
                _ = await rig.store.waitForCompletions(6 + round)
            }
            #expect(rig.sender.calls.count == 4)
            let c0 = try #require(try await rig.sqlite.push(id: "c0"))
            #expect(c0.attempts == 0 && c0.state == .queued, "four tries at an unreachable network count none")

            // Back: the next probe is delivered, and the backlog goes at once, calls first; the
            // call that expired meanwhile is finished, not sent.
            rig.sender.setReachable(.apns)
            rig.clock.advance(by: .milliseconds(250))
            rig.dispatcher.wake()
            let calls = await rig.sender.waitForCalls(6)
            #expect(calls[4].pushIDs == ["c0"])
            #expect(calls[5].pushIDs == ["c1", "m0", "m1", "m2"])
            #expect(calls[5].at == s + 1000, "drained as soon as the probe came back")
            _ = await rig.store.waitForCompletions(14)
            for id in ["c0", "c1", "m0", "m1", "m2"] {
                let entry = try #require(try await rig.sqlite.push(id: id))
                #expect(entry.state == .delivered && entry.attempts == 1, "\(id): \(entry)")
            }
            let expired = try #require(try await rig.sqlite.push(id: "c-short"))
            #expect(expired.state == .expired && expired.lastReason == "expired before sending")
            #expect(rig.dispatcher.networkHealth[.apns] == .healthy(since: s + 1000))
        }
    }

    @Test("pushes through another network keep going while one is unreachable")
    func otherNetworkUnaffected() async throws {
        let s = Self.start
        let pushes = [
            DispatcherTests.push("m0", at: s - 10),
            StoreFixtures.fcmPush("f0", device: "a1", at: s - 5, expires: s + DispatcherTests.hour),
        ]
        try await Rig.with(.inOrder([]), pushes: pushes, unreachable: .apns) { (rig: Rig) async throws in
            _ = await rig.store.waitForCompletions(2)
            #expect(rig.sender.calls.first?.pushIDs == ["m0", "f0"])
            #expect(try await rig.sqlite.push(id: "f0")?.state == .delivered)
            #expect(rig.dispatcher.networkHealth[.apns]?.isDown == true)

            // A new FCM push goes at once; the APNs push waits for its probe (the clock has not moved).
            let f1 = StoreFixtures.fcmPush("f1", device: "a1", at: s, expires: s + DispatcherTests.hour)
            _ = try await rig.sqlite.accept(StoreFixtures.ingest([f1]))
            rig.dispatcher.wake()
            let calls = await rig.sender.waitForCalls(2)
            #expect(calls[1].pushIDs == ["f1"])
            _ = await rig.store.waitForCompletions(3)
            #expect(try await rig.sqlite.push(id: "f1")?.state == .delivered)
            let m0 = try #require(try await rig.sqlite.push(id: "m0"))
            #expect(m0.state == .queued && m0.attempts == 0)
        }
    }

    @Test(
        "the health machine: down on an unreachable batch, one probe at a time, up on any answer, stale batches ignored"
    )
    func healthMachine() {
        var machine = NetworkHealthMachine(probeInterval: 250, now: 0)
        #expect(machine.handle(.answered(sentAt: 1, at: 2)) == nil)
        #expect(machine.startProbe(at: 5) == false, "no probes while healthy")
        #expect(machine.handle(.unreachable(sentAt: 10, at: 20, reason: "refused")) == .wentDown(reason: "refused"))
        #expect(machine.state == .down(since: 20, nextProbeAt: 270, probing: false))
        // Another batch from before the outage coming back answered says nothing about now.
        #expect(machine.handle(.answered(sentAt: 15, at: 30)) == nil)
        #expect(machine.startProbe(at: 269) == false)
        #expect(machine.startProbe(at: 270) == true)
        #expect(machine.startProbe(at: 271) == false, "one probe at a time")
        #expect(machine.handle(.unreachable(sentAt: 270, at: 280, reason: "refused")) == nil)
        #expect(machine.nextProbeAt == 530)
        #expect(machine.startProbe(at: 530) == true)
        #expect(machine.handle(.nothingToProbe(at: 531)) == nil)
        #expect(machine.nextProbeAt == 781)
        #expect(machine.startProbe(at: 800) == true)
        #expect(machine.handle(.answered(sentAt: 800, at: 810)) == .cameBack(downFor: 790))
        #expect(machine.state == .healthy(since: 810))
        // A batch sent before the recovery that failed does not take the network down again.
        #expect(machine.handle(.unreachable(sentAt: 700, at: 820, reason: "refused")) == nil)
        #expect(machine.isHealthy)
    }
}

extension NetworkHealthMachine.State {
    var isDown: Bool {
        if case .down = self { return true }
        return false
    }
}
