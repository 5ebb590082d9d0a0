import Foundation
import HeraldRelayAPI
import HeraldStore
import Testing

/// The live channel's frames: each reads back as written, the message frame keeps its fields,
/// and a frame this version does not know (or that lacks its id) is ignored.
@Suite("Live channel frames")
struct LiveFrameTests {
    @Test func serverFramesRoundTrip() throws {
        let frames: [LiveServerFrame] = [
            .message(
                LiveMessage(
                    messageID: "m-1",
                    conversation: "c-1",
                    from: Party(id: "a", name: "Dana"),
                    text: "hi / there",
                    sentAt: 5
                )
            ),
            .callStop(callID: "call-1", reason: .answeredElsewhere, state: .answered),
            .callState(callID: "call-1", state: .ringing, deviceID: nil, accepted: true),
            .callState(callID: "call-1", state: .declined, deviceID: "d-2", accepted: false),
            .chatEvent(
                conversation: "chat-1",
                event: TranscriptEventView(
                    position: 4,
                    type: "Message.Text",
                    from: Party(id: "a", name: "Dana"),
                    fromAgent: true,
                    text: "shipped / today",
                    at: 7
                )
            ),
        ]
        for frame in frames {
            #expect(LiveServerFrame(jsonText: try frame.jsonText()) == frame)
        }
        let message = try #require(
            try JSONSerialization.jsonObject(with: Data(try frames[0].jsonText().utf8)) as? [String: Any]
        )
        #expect(Set(message.keys) == ["type", "message_id", "conversation", "from", "text", "sent_at"])
        #expect(message["type"] as? String == "message")
        let stop = try frames[1].jsonText()
        #expect(stop == #"{"call_id":"call-1","reason":"answered_elsewhere","state":"answered","type":"call.stop"}"#)
    }

    @Test func clientFramesRoundTrip() {
        let frames: [LiveClientFrame] = [
            .presence(activeIn: "c-1"), .presence(activeIn: nil), .ack(messageID: "m-1"),
            .callRinging(callID: "x"), .callAnswer(callID: "x"), .callDecline(callID: "x"),
        ]
        for frame in frames { #expect(LiveClientFrame(jsonText: frame.jsonText()) == frame) }
        #expect(LiveClientFrame(jsonText: #"{"type":"call.answer"}"#) == nil)
        #expect(LiveClientFrame(jsonText: #"{"type":"call.hold","call_id":"x"}"#) == nil)
        #expect(LiveClientFrame(jsonText: "not json") == nil)
        #expect(
            LiveServerFrame(jsonText: #"{"type":"call.stop","call_id":"x","reason":"bored","state":"ended"}"#) == nil
        )
    }
}
