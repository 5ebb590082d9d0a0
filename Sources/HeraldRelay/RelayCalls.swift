import Foundation
import HeraldCrypto
public import HeraldRelayAPI
public import HeraldStore

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
            let time = context.clock.now()
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

    /// Runs the event through the call's machine and commits what it says; a compare-and-set
    /// lost to another end runs the event again on the call as it then is.
    private func apply(_ event: CallMachine.Event, to call: CallRecord) async throws(RelayError) -> CallView {
        var machine = CallMachine(call)
        let actions = machine.handle(event)
        let time = context.clock.now()
        let app = try await context.app(id: call.appID)
        let plan = try CallPlanner.plan(actions, machine: machine, call: call, app: app, at: time)
        guard let transition = plan.transition else {
            if case .ringing(let device) = event, call.state == .ringing {
                let change = CallPlanner.ringing(call: call, device: device, events: plan.events, at: time)
                try await context.commit(change)
                let stored = try await record(call.id)
                // A call that ended meanwhile answers what a late device is told.
                return stored.state.isEnded ? try await apply(event, to: stored) : CallView(stored)
            }
            try await context.commit(CallPlanner.lateStops(plan, call: call), over: live)
            return CallView(call)
        }
        let elsewhere = try await heldElsewhere(plan.stops?.devices ?? [], now: time)
        let alerts = plan.missedAlert ? await missedAlerts(call, at: time) : []
        let change = CallPlanner.end(
            plan,
            transition: transition,
            call: call,
            elsewhere: elsewhere,
            alerts: alerts,
            at: time
        )
        let outcomes = try await context.commit(change, over: live)
        // A call never leaves an ended state, so the call read now is the one this end (or the
        // one that came first) left.
        let stored = try await record(call.id)
        // Another device, the caller or the timer came first.
        return outcomes == [.applied] ? CallView(stored) : try await apply(event, to: stored)
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
