import HeraldStore
import Testing

@testable import HeraldRelay

/// A transcript event's append and deliveries, planned without a store.
@Suite("Transcript planner")
struct TranscriptPlannerTests {
    @Test("the append is store work that an ended chat refuses with the relay's answer")
    func append() {
        let event = TranscriptEvent(
            conversation: "chat-1",
            userID: "alice",
            type: "Message.Text",
            sealedAuthor: [1],
            fromAgent: true,
            sealedText: [2],
            at: 100
        )
        let ended = RelayError.conflict.with(detail: "chat chat-1 ended")
        let change = TranscriptPlanner.append(event, ended: ended)
        #expect(change.writes == [.work(.appendTranscript(event))])
        #expect(change.refusalWhenConflict == ended)
        #expect(change.effects.isEmpty && change.effectsWhenApplied.isEmpty)
    }

    @Test(
        "the customer's own events and the configured types reach nobody",
        arguments: [
            ("Message.Text", true, false),
            ("Message.Text", false, true),
            ("Notice.TypingStarted", true, true),
            ("Notice.Custom", true, false),
        ]
    )
    func filtered(type: String, fromAgent: Bool, expected: Bool) {
        let filtered = TranscriptPlanner.isFiltered(
            type: type,
            fromAgent: fromAgent,
            filteredTypes: ["Notice.TypingStarted", "Notice.TypingStopped"]
        )
        #expect(filtered == expected)
    }

    @Test("a device pushed since its disconnect gets each event at once; the first push waits for the delay")
    func deliveries() {
        let first = ChatDisconnect(deviceID: "d1", conversation: "chat-1", position: 3, at: 50)
        let again = ChatDisconnect(deviceID: "d2", conversation: "chat-1", position: 1, at: 10, pushed: true)
        let stranger = ChatDisconnect(deviceID: "d9", conversation: "chat-1", position: 1, at: 10)
        let devices: Set<String> = ["d1", "d2"]
        #expect(
            TranscriptPlanner.deliveries([first, again, stranger], userDevices: devices, firstPushDelay: .seconds(30))
                == [.firstPushLater(deviceID: "d1"), .pushNow(deviceID: "d2")]
        )
        #expect(
            TranscriptPlanner.deliveries([first, again], userDevices: devices, firstPushDelay: .zero)
                == [.pushNow(deviceID: "d1"), .pushNow(deviceID: "d2")],
            "no delay: every event is pushed at once"
        )
    }
}
