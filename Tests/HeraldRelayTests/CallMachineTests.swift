import HeraldRelay
import HeraldStore
import Testing

/// A call's life as a state machine: every event in every state, and what the relay is told to do.
@Suite("Call machine")
struct CallMachineTests {
    static func ringing(_ devices: [String] = ["phone", "pad", "watch"], reported: Bool = false) -> CallMachine {
        CallMachine(state: .ringing, devices: devices, ringingReported: reported)
    }

    @Test func theFirstRingingReportWritesTheEventOnce() {
        var machine = Self.ringing()
        #expect(
            machine.handle(.ringing(device: "pad"))
                == [.recordReport(device: "pad", .ringing), .webhook(.callRinging, device: "pad", reason: nil)]
        )
        #expect(machine.handle(.ringing(device: "phone")) == [.recordReport(device: "phone", .ringing)])
        #expect(machine.state == .ringing && machine.ringingReported)
    }

    @Test func anAnswerStopsEveryOtherDevice() {
        var machine = Self.ringing()
        #expect(
            machine.handle(.answer(device: "pad")) == [
                .transition(to: .answered(by: "pad")),
                .recordReport(device: "pad", .answered),
                .webhook(.callAnswered, device: "pad", reason: nil),
                .stop(devices: ["phone", "watch"], reason: .answeredElsewhere),
            ]
        )
        #expect(machine.state == .answered(by: "pad"))
    }

    @Test func aDeclineOnOneDeviceEndsTheCallForAll() {
        var machine = Self.ringing()
        let actions = machine.handle(.decline(device: "phone"))
        #expect(actions.contains(.stop(devices: ["pad", "watch"], reason: .declinedElsewhere)))
        #expect(actions.contains(.webhook(.callDeclined, device: "phone", reason: nil)))
        #expect(machine.state == .declined(by: "phone"))
    }

    @Test func theCallerHangingUpStopsEveryDevice() {
        var machine = Self.ringing()
        #expect(
            machine.handle(.cancel) == [
                .transition(to: .cancelled),
                .webhook(.callCancelled, device: nil, reason: "remote_ended"),
                .stop(devices: ["phone", "pad", "watch"], reason: .remoteEnded),
            ]
        )
    }

    @Test func nobodyAnsweringIsMissedWithTheAlert() {
        var machine = Self.ringing()
        let actions = machine.handle(.timeout)
        #expect(actions.first == .transition(to: .missed))
        #expect(actions.contains(.stop(devices: ["phone", "pad", "watch"], reason: .unanswered)))
        #expect(actions.last == .queueMissedAlert)
        #expect(machine.state == .missed)
    }

    @Test(arguments: [
        CallMachine.State.answered(by: "pad"), .declined(by: "pad"), .cancelled, .missed,
    ])
    func anEndedCallRefusesAndStopsLateDevices(_ ended: CallMachine.State) {
        var machine = CallMachine(state: ended, devices: ["phone", "pad"], ringingReported: true)
        #expect(machine.handle(.answer(device: "phone")) == [.refuse(ended: ended)])
        #expect(machine.handle(.decline(device: "phone")) == [.refuse(ended: ended)])
        #expect(machine.handle(.cancel) == [.refuse(ended: ended)])
        #expect(machine.handle(.timeout) == [])
        guard let reason = ended.stopReason else {
            Issue.record("an ended state has a stop reason")
            return
        }
        #expect(machine.handle(.ringing(device: "phone")) == [.stop(devices: ["phone"], reason: reason)])
        // The device that ended the call is not told to stop ringing its own call.
        let own: [CallMachine.Action] = ended.endedBy == "pad" ? [] : [.stop(devices: ["pad"], reason: reason)]
        #expect(machine.handle(.ringing(device: "pad")) == own)
        #expect(machine.state == ended)
    }

    @Test func aCallOnOneDeviceStopsNobodyElse() {
        var machine = Self.ringing(["phone"])
        #expect(!machine.handle(.answer(device: "phone")).contains { if case .stop = $0 { true } else { false } })
    }

    @Test func aStoredCallBuildsItsMachine() {
        let record = CallRecord(
            id: "c",
            appID: "app",
            userID: "u",
            media: "audio",
            sealedCaller: [],
            state: .declined,
            deviceID: "pad",
            createdAt: 1,
            expiresAt: 2,
            ringingAt: 1,
            updatedAt: 1,
            devices: [.init(deviceID: "pad", report: .declined), .init(deviceID: "phone", report: .ringing)]
        )
        let machine = CallMachine(record)
        #expect(
            machine.state == .declined(by: "pad") && machine.devices == ["pad", "phone"] && machine.ringingReported
        )
    }
}
