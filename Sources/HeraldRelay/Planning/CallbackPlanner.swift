import HeraldCrypto
import HeraldRelayAPI
import HeraldStore

/// A callback's changes: scheduled, answered by a device, or pushed and expired by the scheduler.
/// Pure: `RelayCallbacks` and the scheduler read the callback and its app, seal the pushes and
/// commit what this decides (`CallbackMachine` says what an answer or a due callback becomes).
enum CallbackPlanner {
    /// A new callback with its first history line, once per idempotency key (`duplicate`: the
    /// earlier one stands). Counted and the scheduler woken, whatever the answer, as a repeated
    /// request is.
    static func schedule(
        _ record: CallbackRecord,
        history: CallbackHistoryEntry,
        idempotencyKey: String?
    ) -> RelayChange {
        RelayChange(
            writes: [.scheduleCallback(record, history: history, idempotencyKey: idempotencyKey)],
            effects: [.count(.callbacksScheduled, 1), .wakeCallbacks]
        )
    }

    /// A device's answer run through the callback's machine: the compare-and-set change to write
    /// (with its history entry and `callback.action` event, and once applied the answer counted
    /// and, for a snooze, the scheduler woken) and the answer the device gets, or why the
    /// callback takes no answer now.
    static func answer(
        _ record: CallbackRecord,
        with action: CallbackAction,
        from device: DeviceRecord,
        app: AppRecord,
        at time: Int64
    ) throws(RelayError) -> Planned<CallbackAnswerView> {
        let id = record.id
        var machine = CallbackMachine(record)
        let actions: [CallbackMachine.Action]
        do {
            actions = try machine.handle(.answered(action, at: time))
        } catch {
            switch error {
            case .notWaitingForAnAnswer:
                throw RelayError.conflict.with(
                    detail:
                        "callback \(id) is not waiting for an answer: its next push is due at \(RelayCallbacks.format(record.dueAt))"
                )
            case .alreadyFinished(let state):
                throw RelayError.conflict.with(detail: "callback \(id) is \(state.rawValue) already")
            }
        }
        let next =
            actions.contains(where: { if case .scheduleNextPush = $0 { true } else { false } }) ? machine.dueAt : nil
        let data = CallbackEventData(
            callbackID: id,
            userID: record.userID,
            state: machine.state.rawValue,
            action: action.id,
            kind: action.kind.rawValue,
            deviceID: device.id,
            nextPushAt: next.map(RelayCallbacks.format),
            nextPushAtMs: next
        )
        let change = CallbackChange(
            callbackID: id,
            expectedVersion: record.version,
            state: machine.state,
            dueAt: machine.dueAt,
            lastAction: action.id,
            history: [
                CallbackHistoryEntry(
                    at: time,
                    event: .action,
                    state: machine.state,
                    action: action.id,
                    nextPushAt: next
                )
            ],
            events: WebhookEvent.reporting(
                app: app,
                .callbackAction,
                orderingKey: "callback:" + id,
                data: data,
                at: time
            ),
            // Answered, so the push reached the device: its `callback.pushed` goes first if the
            // delivery was not recorded yet (the outcome may come after the answer).
            answeredPush: record.pushes,
            now: time
        )
        let view = CallbackAnswerView(
            callbackID: id,
            action: action.id,
            kind: action.kind.rawValue,
            state: machine.state,
            nextPushAtMs: next
        )
        var effects: [RelayEffect] = [.count(.callbackAnswers, 1)]
        // A snooze: the scheduler's next wake-up may be later than its push.
        if next != nil { effects.insert(.wakeCallbacks, at: 0) }
        return Planned(
            change: RelayChange(writes: [.changeCallback(change)], effectsWhenApplied: effects),
            answer: view
        )
    }

    /// The scheduler's change to a due callback (its pushes, its expiry, or only the claim's
    /// release); once applied, the queued pushes counted and the dispatchers woken.
    static func due(_ change: CallbackChange) -> RelayChange {
        let queued = change.pushes.count { $0.state == .queued }
        return RelayChange(
            writes: [.changeCallback(change)],
            effectsWhenApplied: queued == 0
                ? [] : [.count(.queued, queued), .count(.callbackPushes, 1), .wakeDispatchers]
        )
    }
}
