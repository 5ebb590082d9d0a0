import HeraldCrypto
import HeraldRelay
import HeraldStore
import Testing

/// A callback's life, every transition and every refusal.
@Suite("Callback machine", .timeLimit(.minutes(1)))
struct CallbackMachineTests {
    let ready = CallbackAction(id: "ready", label: "Yes", kind: .connect)
    let snooze = CallbackAction(id: "snooze", label: "Later", kind: .snooze, delaySeconds: 300)
    let cancel = CallbackAction(id: "cancel", label: "No", kind: .cancel)

    func scheduled(due: Int64 = 1_000, expires: Int64 = 3_600_000) -> CallbackMachine {
        CallbackMachine(state: .scheduled, dueAt: due, expiresAt: expires, pushes: 0)
    }

    @Test("not due yet: nothing; due: the first push, reported")
    func dueIsPushed() throws {
        var machine = scheduled()
        #expect(try machine.handle(.due(at: 999)) == [])
        #expect(machine.state == .scheduled)
        #expect(try machine.handle(.due(at: 1_000)) == [.push(sequence: 1), .report(.callbackPushed)])
        #expect(machine.state == .pushed && machine.pushes == 1)
        // Pushed and waiting: a second due pass pushes nothing more.
        #expect(try machine.handle(.due(at: 2_000)) == [])
    }

    @Test("ready connects, cancel cancels; both reported as actions")
    func readyAndCancel() throws {
        var machine = scheduled()
        _ = try machine.handle(.due(at: 1_000))
        var other = machine
        #expect(try machine.handle(.answered(ready, at: 5_000)) == [.report(.callbackAction)])
        #expect(machine.state == .connected)
        #expect(try other.handle(.answered(cancel, at: 5_000)) == [.report(.callbackAction)])
        #expect(other.state == .cancelled)
    }

    @Test("snooze: scheduled again after the action's delay, then pushed as push 2")
    func snoozeBringsTheNextPush() throws {
        var machine = scheduled()
        _ = try machine.handle(.due(at: 1_000))
        #expect(
            try machine.handle(.answered(snooze, at: 10_000))
                == [.scheduleNextPush(at: 310_000), .report(.callbackAction)]
        )
        #expect(machine.state == .scheduled && machine.dueAt == 310_000)
        #expect(try machine.handle(.due(at: 309_999)) == [])
        #expect(try machine.handle(.due(at: 310_000)) == [.push(sequence: 2), .report(.callbackPushed)])
    }

    @Test("its expiration passes, scheduled or pushed: expired, reported; no push")
    func expires() throws {
        var waiting = scheduled(due: 1_000, expires: 2_000)
        _ = try waiting.handle(.due(at: 1_000))
        #expect(try waiting.handle(.due(at: 2_000)) == [.report(.callbackExpired)])
        #expect(waiting.state == .expired)
        var late = scheduled(due: 1_000, expires: 2_000)
        #expect(try late.handle(.due(at: 5_000)) == [.report(.callbackExpired)])
        #expect(late.state == .expired && late.pushes == 0)
    }

    @Test("answers refused: before the push, after an answer, after the expiration; nothing changes")
    func refusals() throws {
        var machine = scheduled(due: 1_000, expires: 2_000)
        #expect(throws: CallbackMachine.Refusal.notWaitingForAnAnswer) {
            try machine.handle(.answered(ready, at: 500))
        }
        _ = try machine.handle(.due(at: 1_000))
        #expect(throws: CallbackMachine.Refusal.alreadyFinished(.expired)) {
            try machine.handle(.answered(ready, at: 2_000))
        }
        #expect(machine.state == .pushed)
        _ = try machine.handle(.answered(cancel, at: 1_500))
        #expect(throws: CallbackMachine.Refusal.alreadyFinished(.cancelled)) {
            try machine.handle(.answered(ready, at: 1_600))
        }
        #expect(try machine.handle(.due(at: 3_000)) == [])
        #expect(machine.state == .cancelled)
    }
}
