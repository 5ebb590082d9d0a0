import HeraldMacros
import HeraldPush
public import HeraldRelayAPI
public import HeraldStore
import HeraldTracing
import Metrics
public import ServiceLifecycle

/// The relay's push deadlines (docs/receipts.md, "Deadlines that escalate"): a push its phone did
/// not show in time gets what its app's rule says, once, on whichever node claims the deadline
/// first; a VoIP push the app did not report to CallKit is counted against its device and app.
///
/// A deadline is a row written with its push (or with the receipt that arms it), so it outlives
/// restarts and nodes. A node claims it under a lease when due; the claim's settling
/// (`StoreChange.settleDeadline`) writes what the action wrote in the same transaction and only
/// if the claim still holds, so a receipt that cancelled it, or another node that took a lapsed
/// claim, leaves nothing written twice. Ringing as a call is the one action written apart (the
/// call path's own commit): its call id is made from the push id, so a second try rings nobody.
public final class RelayDeadlines: Sendable {
    let context: RelayContext
    let ingest: RelayIngest
    let planner: DeadlinePlanner

    init(context: RelayContext, ingest: RelayIngest) {
        self.context = context
        self.ingest = ingest
        self.planner = context.deadlinePlanner
    }

    /// Claims the deadlines due now for `owner` (held for `lease`) and acts on each; returns how
    /// many it settled.
    public func fireDue(owner: String, lease: Duration = .seconds(30)) async throws(RelayError) -> Int {
        let time = context.clock.now()
        let until = time + lease.milliseconds
        let claimed = try await context.storing {
            try await $0.claimDueDeadlines(limit: 64, owner: owner, now: time, leaseUntil: until)
        }
        return await context.act(on: claimed, "a push's deadline", id: \.pushID) { deadline throws(RelayError) in
            try await fire(deadline, owner: owner, at: time)
        }
    }

    /// Acts on one claimed deadline, in its push's trace (docs/tracing.md): the pushes and the
    /// call an escalation makes, and its event, join the trace of the request that made the push.
    private func fire(_ deadline: PushDeadline, owner: String, at time: Int64) async throws(RelayError) -> Bool {
        let push = try await context.storing { try await $0.push(id: deadline.pushID) }
        return try await context.tracing.withSpan("herald.deadline", inTraceOf: push?.traceParent) {
            span throws(RelayError) in
            span.set("herald.deadline.action", deadline.action.rawValue)
            return try await act(on: deadline, push: push, owner: owner, at: time)
        }
    }

    private func act(
        on deadline: PushDeadline,
        push: OutboxEntry?,
        owner: String,
        at time: Int64
    ) async throws(RelayError) -> Bool {
        let receipts = try await context.storing { try await $0.receipts(pushID: deadline.pushID) }
        let device = try await context.storing { try await $0.device(id: deadline.deviceID) }
        var callReport: CallDeviceReport?
        if let push, push.kind == .call {
            let subject = push.subjectID
            let call = try await context.storing { try await $0.call(id: subject) }
            callReport = call?.devices.first { $0.deviceID == deadline.deviceID }?.report
        }
        let decision = planner.decide(
            deadline,
            push: push,
            receipts: receipts,
            deviceExists: device != nil,
            callReport: callReport
        )
        var then: [StoreChange] = []
        var effects: [RelayEffect] = []
        switch decision {
        case .settle:
            break
        case .unreported:
            guard let device, let push else { break }
            then.append(.countUnreportedCall(deviceID: device.id, at: time))
            effects.append(.count(.callsUnreported(app: device.appID), 1))
            let data = DeadlineEventData(deadline: deadline, device: device, action: deadline.action, pushes: [])
            then += try await events(.pushCallUnreported, push: push, device: device, data: data, at: time)
        case .escalate(let action):
            guard let device, let push else { break }
            let pushes = try await escalation(action, of: push, device: device, at: time)
            if !pushes.isEmpty {
                then.append(.accept(Ingest(idempotencyKey: nil, message: nil, pushes: pushes, receipt: [])))
                effects += [.count(.queued, pushes.count { $0.state == .queued }), .wakeDispatchers]
            }
            effects.append(.count(.escalations(action, app: device.appID), 1))
            var data = DeadlineEventData(deadline: deadline, device: device, action: action, pushes: pushes)
            if action == .ring { data.callID = try await ring(for: push, device: device) }
            then += try await events(.pushUnseen, push: push, device: device, data: data, at: time)
        }
        if then.contains(where: { if case .enqueueWebhookEvents = $0 { true } else { false } }) {
            effects.append(.wakeWebhooks)
        }
        let change = RelayChange(
            writes: [.settleDeadline(deadline, owner: owner, then: then)],
            effectsWhenApplied: effects
        )
        return try await context.commit(change) == [.applied]
    }

    /// The webhook event reporting a deadline, for the device's app.
    private func events(
        _ type: WebhookEventType,
        push: OutboxEntry,
        device: DeviceRecord,
        data: DeadlineEventData,
        at time: Int64
    ) async throws(RelayError) -> [StoreChange] {
        guard let app = try await context.app(id: device.appID) else { return [] }
        var events = WebhookEvent.reporting(app: app, type, orderingKey: "push:" + push.pushID, data: data, at: time)
        // The push's other events' trace (docs/tracing.md).
        for index in events.indices { events[index].traceParent = push.traceParent }
        return events.isEmpty ? [] : [.enqueueWebhookEvents(events)]
    }
}

/// Runs the deadlines as a service: at the next due time on the relay's clock, and every `poll`
/// (real time) for what other nodes wrote. Stops on graceful shutdown (a claim it held lapses and
/// another node, or the next start, takes it).
@MemberwiseInit
public struct DeadlineScheduler: Service {
    let deadlines: RelayDeadlines
    /// Claims are held under this owner (the node's id).
    public let owner: String
    /// The longest wait between two looks at the store.
    public var poll: Duration = .seconds(1)

    public func run() async throws {
        let (deadlines, owner, context) = (deadlines, owner, deadlines.context)
        await context.runDue("due push deadlines", wake: context.deadlinesArmed, poll: poll) {
            () throws(RelayError) in
            try await deadlines.fireDue(owner: owner)
        } next: {
            context.ahead((try? await context.store.nextDeadlineDueTime()) ?? nil)
        }
    }
}
