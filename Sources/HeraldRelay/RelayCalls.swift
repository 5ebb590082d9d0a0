import Foundation
import HeraldCrypto
public import HeraldRelayAPI
public import HeraldStore
import Metrics

/// The relay's calls part: a call's life after its VoIP push (`CallMachine` over the store's
/// `CallStore`). Devices report ringing, answer or decline (over their live channel or HTTP);
/// the backend reads and cancels; the timer ends a call nobody answered as missed and queues the
/// missed-call alerts.
///
/// Every other device still ringing is told to stop over the live channel it holds, on this node
/// directly or, when another node holds it, by a stop written with the call's end for that node
/// (woken like a live handover). Never by a push: iOS requires every VoIP push to be reported to
/// CallKit as a call.
public final class RelayCalls: Sendable {
    let context: RelayContext
    let live: LiveChannels
    let directory: any LiveSessionDirectory
    /// Names this node's claims of missed-call timers.
    let owner: String

    init(context: RelayContext, live: LiveChannels, directory: any LiveSessionDirectory) {
        self.context = context
        self.live = live
        self.directory = directory
        self.owner = directory.nodeID ?? "relay-" + UUID().uuidString
    }

    // MARK: Reading

    /// A call, for the backend.
    public func call(id: String) async throws(RelayError) -> CallView {
        CallView(try await record(id))
    }

    /// A call, for a device of its user.
    public func call(id: String, for device: DeviceRecord) async throws(RelayError) -> CallView {
        CallView(try await record(id, for: device))
    }

    // MARK: Events

    /// The backend hangs up: a ringing call ends `cancelled`, every device stops (`remote_ended`).
    public func cancel(id: String) async throws(RelayError) -> CallView {
        try await apply(.cancel, to: try await record(id))
    }

    /// A device shows the call. On a call that ended already, its answer is the call as it is, and
    /// its live channel gets `call.stop`.
    public func ringing(id: String, device: DeviceRecord) async throws(RelayError) -> CallView {
        try await apply(.ringing(device: device.id), to: try await record(id, for: device))
    }

    /// A device answers: the first answer or decline wins; a later one is a conflict.
    public func answer(id: String, device: DeviceRecord) async throws(RelayError) -> CallView {
        try await apply(.answer(device: device.id), to: try await record(id, for: device))
    }

    /// A device declines, for every device of the user.
    public func decline(id: String, device: DeviceRecord) async throws(RelayError) -> CallView {
        try await apply(.decline(device: device.id), to: try await record(id, for: device))
    }

    /// Ends as missed the calls whose time to live passed (claimed by one node at a time, across
    /// nodes), with their missed-call alerts; returns how many.
    @discardableResult
    public func expireDue() async -> Int {
        var missed = 0
        while true {
            let time = context.now()
            let due: [CallRecord]
            do {
                due = try await context.store.claimDueCalls(
                    now: time,
                    owner: owner,
                    leaseUntil: time + 60_000,
                    limit: 50
                )
            } catch {
                context.logger.warning("cannot claim the calls nobody answered", metadata: ["error": "\(error)"])
                return missed
            }
            for call in due {
                do {
                    _ = try await apply(.timeout, to: call)
                    missed += 1
                } catch {
                    // Its lease ends and a claim takes it again.
                    context.logger.error(
                        "cannot end a call nobody answered",
                        metadata: ["call": "\(call.id)", "error": "\(error)"]
                    )
                }
            }
            if due.count < 50 { return missed }
        }
    }

    /// When the next ringing call's time to live passes.
    public func nextDue() async -> Int64? {
        try? await context.store.nextCallDue()
    }

    /// Sends on this node's channels the stops other nodes handed it.
    public func deliverStops() async {
        guard let node = directory.nodeID else { return }
        do {
            for stop in try await context.store.takeCallStops(nodeID: node) {
                let state = try await context.store.call(id: stop.callID)?.state ?? .cancelled
                live.send(.callStop(callID: stop.callID, reason: stop.reason, state: state), to: stop.deviceID)
            }
        } catch {
            context.logger.warning("cannot read the call stops handed to this node", metadata: ["error": "\(error)"])
        }
    }

    // MARK: The machine's actions

    private func record(_ id: String) async throws(RelayError) -> CallRecord {
        try context.configuration.check(id, "call_id", pattern: .identifier)
        guard let call = try await context.storing({ try await $0.call(id: id) }) else {
            throw RelayError.notFound.with(detail: "no call \(id)")
        }
        return call
    }

    /// The call, if it is for the device's user (otherwise it is not found: a device learns
    /// nothing of other users' calls).
    private func record(_ id: String, for device: DeviceRecord) async throws(RelayError) -> CallRecord {
        let call = try await record(id)
        guard call.userID == device.userID else {
            throw RelayError.notFound.with(detail: "no call \(id) for this device")
        }
        return call
    }

    /// What a call's machine said about one event, gathered from its actions.
    private struct CallPlan {
        var transition: CallMachine.State?
        var events: [WebhookEvent] = []
        var stops: (devices: [String], reason: CallStopReason)?
        var missedAlert = false
    }

    /// Runs the event through the call's machine and does what it says; a compare-and-set lost
    /// to another end runs the event again on the call as it then is.
    private func apply(_ event: CallMachine.Event, to call: CallRecord) async throws(RelayError) -> CallView {
        var machine = CallMachine(call)
        let actions = machine.handle(event)
        let time = context.now()
        let app = try await context.app(id: call.appID)
        let plan = try Self.plan(actions, machine: machine, call: call, app: app, at: time)
        guard let transition = plan.transition else {
            // A ringing report, or a late device to stop.
            if case .ringing(let device) = event, call.state == .ringing {
                return try await reportRinging(event, call: call, device: device, events: plan.events, at: time)
            }
            if let stops = plan.stops {
                sendStops(stops.devices, reason: stops.reason, call: call.id, state: call.state)
            }
            return CallView(call)
        }
        let elsewhere = try await heldElsewhere(plan.stops?.devices ?? [], now: time)
        let end = CallEnd(
            callID: call.id,
            state: transition.name,
            deviceID: transition.endedBy,
            reason: transition.endedBy == nil ? transition.stopReason?.rawValue : nil,
            at: time,
            events: plan.events,
            pushes: plan.missedAlert ? await missedAlerts(call, at: time) : [],
            stops: plan.stops.map { stops in
                elsewhere.compactMap { device, node in
                    CallStop(callID: call.id, deviceID: device, nodeID: node, reason: stops.reason)
                }
                .sorted { $0.deviceID < $1.deviceID }
            } ?? []
        )
        switch try await context.storing({ try await $0.endCall(end) }) {
        case .unknown:
            throw RelayError.notFound.with(detail: "no call \(call.id)")
        case .alreadyEnded(let now):
            // Another device, the caller or the timer came first.
            return try await apply(event, to: now)
        case .ended(let ended):
            if let stops = plan.stops {
                sendStops(
                    stops.devices.filter { elsewhere[$0] == nil },
                    reason: stops.reason,
                    call: call.id,
                    state: ended.state
                )
            }
            self.ended(ended, alerts: end.pushes)
            return CallView(ended)
        }
    }

    /// The machine's actions for one event as a plan: the transition, the webhook events (none
    /// for an app without a webhook), the devices to stop and whether to alert a missed call; a
    /// refusal throws.
    private static func plan(
        _ actions: [CallMachine.Action],
        machine: CallMachine,
        call: CallRecord,
        app: AppRecord?,
        at time: Int64
    ) throws(RelayError) -> CallPlan {
        var plan = CallPlan()
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
            case .stop(let devices, let reason): plan.stops = (devices, reason)
            case .queueMissedAlert: plan.missedAlert = true
            case .refuse(let ended): throw refusal(call, ended)
            }
        }
        return plan
    }

    /// Records a device's ringing report (the first one writes `events`); a call that ended
    /// meanwhile answers what a late device is told.
    private func reportRinging(
        _ event: CallMachine.Event,
        call: CallRecord,
        device: String,
        events: [WebhookEvent],
        at time: Int64
    ) async throws(RelayError) -> CallView {
        let stored = try await context.storing {
            try await $0.reportCallRinging(callID: call.id, deviceID: device, at: time, firstRinging: events)
        }
        guard let stored else { throw RelayError.notFound.with(detail: "no call \(call.id)") }
        if stored.state.isEnded { return try await apply(event, to: stored) }
        return CallView(stored)
    }

    /// What follows a call's end: its missed-call alerts wake the dispatcher (those withheld from
    /// a device without the notification permission were written finished), counted and logged.
    private func ended(_ call: CallRecord, alerts: [OutboxEntry]) {
        let queued = alerts.count { $0.state == .queued }
        if queued > 0 {
            context.metrics.queued.increment(by: queued)
            context.accepted()
        }
        Counter(label: "herald_relay_calls_ended_total", dimensions: [("state", call.state.rawValue)]).increment()
        context.logger.info(
            "call ended",
            metadata: ["call": "\(call.id)", "state": "\(call.state.rawValue)", "alerts": "\(alerts.count)"]
        )
    }

    private func sendStops(_ devices: [String], reason: CallStopReason, call: String, state: CallState) {
        for device in devices {
            live.send(.callStop(callID: call, reason: reason, state: state), to: device)
        }
    }

    /// The nodes holding, elsewhere, these devices' live channels.
    private func heldElsewhere(_ devices: [String], now: Int64) async throws(RelayError) -> [String: String] {
        guard let node = directory.nodeID, !devices.isEmpty else { return [:] }
        let sessions = try await context.storing { try await $0.liveSessions(deviceIDs: devices, now: now) }
        var nodes: [String: String] = [:]
        for session in sessions where session.nodeID != node && !live.isOpen(deviceID: session.deviceID) {
            nodes[session.deviceID] = session.nodeID
        }
        return nodes
    }

    /// The refusal of an answer, a decline or a cancel on an ended call, with what became of it.
    static func refusal(_ call: CallRecord, _ ended: CallMachine.State) -> RelayError {
        let what: String =
            switch ended {
            case .ringing: "is ringing"
            case .answered(let device): "was answered already (by device \(device))"
            case .declined(let device): "was declined already (by device \(device))"
            case .cancelled: "was cancelled by the caller"
            case .missed: "was missed (nobody answered in time)"
            }
        return RelayError.conflict.with(detail: "call \(call.id) \(what)")
    }
}

extension RelayActivation {
    /// The device of a live channel authenticated when it opened, read again (it may have been
    /// deactivated since).
    public func authenticatedDevice(id: String) async throws(RelayError) -> DeviceRecord {
        guard let device = try await context.storing({ try await $0.device(id: id) }) else {
            throw RelayError.unauthorized.with(detail: "the device is no longer activated")
        }
        return device
    }
}
