import HeraldCrypto
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldRelay

/// A callback's changes, planned without a store: what is written, and what is counted and woken
/// once it is.
@Suite("Callback planner")
struct CallbackPlannerTests {
    static let ready = CallbackAction(id: "ready", label: "Yes", kind: .connect)
    static let snooze = CallbackAction(id: "snooze", label: "Later", kind: .snooze, delaySeconds: 300)
    static let device = StoreFixtures.device("d1")

    /// A device's answer at 2 000 ms, from `device`, for an app without a webhook.
    static func answer(_ record: CallbackRecord, with action: CallbackAction) throws -> Planned<CallbackAnswerView> {
        try CallbackPlanner.answer(record, with: action, from: device, app: StoreFixtures.app(), at: 2_000)
    }

    static func record(_ state: CallbackState, pushes: Int = 1) -> CallbackRecord {
        CallbackRecord(
            id: "cb1",
            appID: StoreFixtures.app().id,
            userID: "alice",
            state: state,
            sealedDialog: [1],
            dueAt: 1_000,
            expiresAt: 1_000_000,
            pushes: pushes,
            version: 3,
            createdAt: 500,
            updatedAt: 1_000
        )
    }

    @Test("a schedule is written once per key, counted and wakes the scheduler whatever the answer")
    func schedule() {
        let record = Self.record(.scheduled, pushes: 0)
        let line = CallbackHistoryEntry(at: 500, event: .scheduled, state: .scheduled, nextPushAt: 1_000)
        #expect(
            CallbackPlanner.schedule(record, history: line, idempotencyKey: "callback:k")
                == RelayChange(
                    writes: [.scheduleCallback(record, history: line, idempotencyKey: "callback:k")],
                    effects: [.count(.callbacksScheduled, 1), .wakeCallbacks]
                )
        )
    }

    @Test("an answer is a compare-and-set on the version read; a snooze also wakes the scheduler")
    func answers() throws {
        let connect = try Self.answer(Self.record(.pushed), with: Self.ready)
        guard case .changeCallback(let change) = connect.change.writes.first else {
            Issue.record("no change written: \(connect.change.writes)")
            return
        }
        #expect(change.expectedVersion == 3 && change.state == .connected && change.answeredPush == 1)
        #expect(change.events.isEmpty, "an app without a webhook hears nothing")
        #expect(connect.change.effectsWhenApplied == [.count(.callbackAnswers, 1)])
        #expect(connect.answer.state == .connected && connect.answer.nextPushAtMs == nil)

        let later = try Self.answer(Self.record(.pushed), with: Self.snooze)
        #expect(later.answer.nextPushAtMs == Int64(302_000))
        #expect(later.change.effectsWhenApplied == [.wakeCallbacks, .count(.callbackAnswers, 1)])
    }

    @Test("a callback not waiting for an answer, or finished, refuses it")
    func refusals() {
        for state in [CallbackState.scheduled, .connected] {
            #expect(throws: RelayError.conflict) { try Self.answer(Self.record(state), with: Self.ready) }
        }
    }

    @Test(
        "the scheduler's change counts its queued pushes and wakes the dispatchers; a release alone does nothing more"
    )
    func due() {
        let queued = StoreFixtures.push("p1", device: "d1", kind: .callback, at: 1_000)
        var withheld = StoreFixtures.push("p2", device: "d2", kind: .callback, at: 1_000)
        withheld.state = .skipped
        let pushed = CallbackChange(
            callbackID: "cb1",
            expectedVersion: 3,
            state: .pushed,
            dueAt: 1_000,
            pushed: 1,
            history: [],
            pushes: [queued, withheld],
            now: 1_000
        )
        #expect(
            CallbackPlanner.due(pushed)
                == RelayChange(
                    writes: [.changeCallback(pushed)],
                    effectsWhenApplied: [.count(.queued, 1), .count(.callbackPushes, 1), .wakeDispatchers]
                )
        )
        let release = CallbackChange(
            callbackID: "cb1",
            expectedVersion: 3,
            state: .pushed,
            dueAt: 1_000,
            history: [],
            now: 1_000
        )
        #expect(CallbackPlanner.due(release) == RelayChange(writes: [.changeCallback(release)]))
    }
}
