import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldRelay

/// A call event's change, planned without a store or a channel: what the machine's actions
/// write, which devices get a stop frame from this node, and what is counted and logged.
@Suite("Call planner")
struct CallPlannerTests {
    static let time: Int64 = 5_000

    static func call(_ state: CallState = .ringing, devices: [String] = ["d1", "d2", "d3"]) -> CallRecord {
        CallRecord(
            id: "c1",
            appID: StoreFixtures.app().id,
            userID: "alice",
            media: "audio",
            sealedCaller: [1],
            state: state,
            createdAt: 1_000,
            expiresAt: 31_000,
            updatedAt: 1_000,
            devices: devices.map { CallDeviceRecord(deviceID: $0, report: .pushed) }
        )
    }

    static var hooked: AppRecord {
        var app = StoreFixtures.app()
        app.webhook = AppWebhook(url: "https://crm.example/hook", sealedSecret: [1])
        return app
    }

    /// The machine's plan for `event` on `call`.
    static func plan(_ event: CallMachine.Event, _ call: CallRecord, app: AppRecord?) throws -> CallPlanner.Plan {
        var machine = CallMachine(call)
        let actions = machine.handle(event)
        return try CallPlanner.plan(actions, machine: machine, call: call, app: app, at: time)
    }

    @Test("a decline ends the call for every device: a stop written for the one held elsewhere, a frame for the others")
    func decline() throws {
        let call = Self.call()
        let plan = try Self.plan(.decline(device: "d3"), call, app: Self.hooked)
        #expect(plan.transition == .declined(by: "d3"))
        #expect(plan.events.map(\.type) == [.callDeclined])
        let change = CallPlanner.end(
            plan,
            transition: .declined(by: "d3"),
            call: call,
            elsewhere: ["d2": "node-2"],
            alerts: [],
            at: Self.time
        )
        let end = CallEnd(
            callID: "c1",
            state: .declined,
            deviceID: "d3",
            reason: nil,
            at: Self.time,
            events: plan.events,
            pushes: [],
            stops: [CallStop(callID: "c1", deviceID: "d2", nodeID: "node-2", reason: .declinedElsewhere)]
        )
        #expect(
            change
                == RelayChange(
                    writes: [.endCall(end)],
                    effectsWhenApplied: [
                        .frame(.callStop(callID: "c1", reason: .declinedElsewhere, state: .declined), to: "d1"),
                        .count(.callEnded(.declined), 1),
                        .log("call ended", ["call": "c1", "state": "declined", "alerts": "0"]),
                    ]
                )
        )
    }

    @Test("the timeout ends the call missed with its alerts: ringing devices stopped, queued alerts counted")
    func missed() throws {
        let call = Self.call(devices: ["d1"])
        let plan = try Self.plan(.timeout, call, app: nil)
        #expect(plan.missedAlert)
        #expect(plan.events.isEmpty, "an app without a webhook hears nothing")
        let queued = StoreFixtures.push("a1", device: "d1", at: Self.time)
        var withheld = StoreFixtures.push("a2", device: "d1", at: Self.time)
        withheld.state = .skipped
        let change = CallPlanner.end(
            plan,
            transition: .missed,
            call: call,
            elsewhere: [:],
            alerts: [queued, withheld],
            at: Self.time
        )
        guard case .endCall(let end) = change.writes.first else {
            Issue.record("no end written: \(change.writes)")
            return
        }
        #expect(end.state == .missed && end.reason == CallStopReason.unanswered.rawValue && end.deviceID == nil)
        #expect(end.pushes == [queued, withheld])
        #expect(
            change.effectsWhenApplied == [
                .frame(.callStop(callID: "c1", reason: .unanswered, state: .missed), to: "d1"),
                .count(.queued, 1), .wakeDispatchers, .count(.callEnded(.missed), 1),
                .log("call ended", ["call": "c1", "state": "missed", "alerts": "2"]),
            ]
        )
    }

    @Test("a ringing report writes the report with the first ringing's events, and nothing else")
    func ringing() throws {
        let call = Self.call()
        let plan = try Self.plan(.ringing(device: "d2"), call, app: Self.hooked)
        #expect(plan.transition == nil)
        let change = CallPlanner.ringing(call: call, device: "d2", events: plan.events, at: Self.time)
        let ringing = CallRinging(callID: "c1", deviceID: "d2", at: Self.time, firstRinging: plan.events)
        #expect(change == RelayChange(writes: [.reportCallRinging(ringing)]))
        #expect(plan.events.map(\.type) == [.callRinging])
    }

    @Test("a device that rings after the call ended is stopped by a frame; nothing is written")
    func lateDevice() throws {
        let call = Self.call(.answered)
        var answered = call
        answered.deviceID = "d1"
        let plan = try Self.plan(.ringing(device: "d2"), answered, app: Self.hooked)
        #expect(
            CallPlanner.lateStops(plan, call: answered)
                == RelayChange(
                    writes: [],
                    effects: [.frame(.callStop(callID: "c1", reason: .answeredElsewhere, state: .answered), to: "d2")]
                )
        )
    }

    @Test("an answer on an ended call is refused with what became of it")
    func refused() {
        var cancelled = Self.call(.cancelled)
        cancelled.endedAt = 2_000
        #expect(throws: RelayError.conflict) { try Self.plan(.answer(device: "d1"), cancelled, app: nil) }
    }
}
