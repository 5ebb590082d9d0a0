import HeraldRelayAPI
import HeraldStore

/// A call event's change: the call machine's actions as the rows to write and what to do once
/// they are written. Pure: `RelayCalls` reads what it needs (the call, its app, the nodes holding
/// the devices' channels elsewhere, the missed-call alerts it sealed) and commits the change.
enum CallPlanner {
    /// What a call's machine said about one event, gathered from its actions.
    struct Plan: Sendable, Equatable {
        var transition: CallMachine.State?
        var events: [WebhookEvent] = []
        var stops: Stops?
        var missedAlert = false
    }

    /// The devices to stop, and why.
    struct Stops: Sendable, Equatable {
        var devices: [String]
        var reason: CallStopReason
    }

    /// The machine's actions for one event as a plan: the transition, the webhook events (none
    /// for an app without a webhook), the devices to stop and whether to alert a missed call; a
    /// refusal throws.
    static func plan(
        _ actions: [CallMachine.Action],
        machine: CallMachine,
        call: CallRecord,
        app: AppRecord?,
        at time: Int64
    ) throws(RelayError) -> Plan {
        var plan = Plan()
        for action in actions {
            switch action {
            case .transition(let state): plan.transition = state
            case .recordReport: break
            case .webhook(let type, let device, let reason):
                guard let app else { continue }
                let data = CallEventData(
                    callID: call.id,
                    userID: call.userID,
                    state: type == .callRinging ? .ringing : machine.state.name,
                    deviceID: device,
                    reason: reason
                )
                plan.events += WebhookEvent.reporting(
                    app: app,
                    type,
                    orderingKey: "call:" + call.id,
                    data: data,
                    at: time
                )
            case .stop(let devices, let reason): plan.stops = Stops(devices: devices, reason: reason)
            case .queueMissedAlert: plan.missedAlert = true
            case .refuse(let ended): throw RelayCalls.refusal(call, ended)
            }
        }
        return plan
    }

    /// The call's end (`transition`), one compare-and-set from ringing, with the events, the
    /// missed-call `alerts` and a stop for each device whose channel another node holds
    /// (`elsewhere`: device → node). Once applied: the stop frames to the devices whose channels
    /// this node may hold, the alerts counted and the dispatchers woken, the end counted and
    /// logged.
    static func end(
        _ plan: Plan,
        transition: CallMachine.State,
        call: CallRecord,
        elsewhere: [String: String],
        alerts: [OutboxEntry],
        at time: Int64
    ) -> RelayChange {
        let stops = plan.stops.map { stops in
            elsewhere.map { device, node in
                CallStop(callID: call.id, deviceID: device, nodeID: node, reason: stops.reason)
            }
            .sorted { $0.deviceID < $1.deviceID }
        }
        let end = CallEnd(
            callID: call.id,
            state: transition.name,
            deviceID: transition.endedBy,
            reason: transition.endedBy == nil ? transition.stopReason?.rawValue : nil,
            at: time,
            events: plan.events,
            pushes: alerts,
            stops: stops ?? []
        )
        var effects = frames(plan.stops, call: call.id, state: transition.name) { elsewhere[$0] == nil }
        // Alerts withheld from a device without the notification permission are written finished.
        let queued = alerts.count { $0.state == .queued }
        if queued > 0 { effects += [.count(.queued, queued), .wakeDispatchers] }
        effects += [
            .count(.callEnded(transition.name), 1),
            .log("call ended", ["call": call.id, "state": transition.name.rawValue, "alerts": "\(alerts.count)"]),
        ]
        return RelayChange(writes: [.endCall(end)], effectsWhenApplied: effects)
    }

    /// A device's report that the call rings on it; the first report writes `events`.
    static func ringing(call: CallRecord, device: String, events: [WebhookEvent], at time: Int64) -> RelayChange {
        RelayChange(writes: [
            .reportCallRinging(CallRinging(callID: call.id, deviceID: device, at: time, firstRinging: events))
        ])
    }

    /// No transition, but devices to stop (a late device of an ended call): their frames only.
    static func lateStops(_ plan: Plan, call: CallRecord) -> RelayChange {
        RelayChange(writes: [], effects: frames(plan.stops, call: call.id, state: call.state) { _ in true })
    }

    /// A stop frame for each device to stop that `here` keeps on this node.
    private static func frames(
        _ stops: Stops?,
        call: String,
        state: CallState,
        here: (String) -> Bool
    ) -> [RelayEffect] {
        guard let stops else { return [] }
        return stops.devices.filter(here).map { device in
            .frame(.callStop(callID: call, reason: stops.reason, state: state), to: device)
        }
    }
}
