import Foundation
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import Testing

/// Chat events over the live channel: the customer's devices with a channel get each shown event
/// as a `chat_event` frame at its transcript position; a disconnected device, a device without a
/// channel, another user's device and typing notices get none.
@Suite("Chat events over the live channel", .timeLimit(.minutes(2)))
struct ChatLiveTests {
    /// Sends a frame nothing else sends: frames on a channel keep their order, so the first frame
    /// a device reads after the events tells whether any event reached it before.
    static func marker(_ harness: RelayHarness, _ phone: RelayHarness.Phone) {
        #expect(
            harness.relay.live.send(
                .callStop(callID: "marker", reason: .remoteEnded, state: .cancelled),
                to: phone.deviceID
            )
        )
    }

    static func post(_ harness: RelayHarness, _ body: String) async throws -> ChatEventReceipt {
        let reply = try await harness.call(.POST, "/v1/chats/chat-1/events", body: body)
        #expect(reply.status == 202, "\(reply.text)")
        return try reply.decode(ChatEventReceipt.self)
    }

    @Test("shown events reach the customer's channels with their positions; disconnected, channel-less, typing: none")
    func liveChatEvents() async throws {
        try await RelayHarness.with(ChatTests.setup(delay: ChatTests.delay)) { harness in
            harness.clock.freeze()
            let onScreen = try await harness.phone(user: "cust")
            let away = try await harness.phone(user: "cust")
            let noChannel = try await harness.phone(user: "cust")
            let stranger = try await harness.phone(user: "someone-else")
            // The channel is enough: the app need not have said it is in the chat.
            let client = try await CallFlowTests.channel(harness, onScreen)
            let awayClient = try await CallFlowTests.channel(harness, away)
            let strangerClient = try await CallFlowTests.channel(harness, stranger)
            defer { for open in [client, awayClient, strangerClient] { open.close() } }
            try await ChatTests.disconnect(harness, away, at: 0)

            let welcome = try await Self.post(harness, ChatTests.event(text: "Welcome / hi"))
            #expect(welcome.position == 1 && welcome.pushes.isEmpty && welcome.scheduled == [away.deviceID])
            let typing = try await Self.post(harness, ChatTests.event("Notice.TypingStarted"))
            #expect(typing.filtered && typing.position == 2)
            let own = try await Self.post(harness, ChatTests.event(text: "my question", agent: false))
            #expect(own.filtered && own.position == 3)
            let reply = try await Self.post(harness, ChatTests.event(text: "Your order shipped"))
            #expect(reply.position == 4)
            for phone in [onScreen, away, stranger] { Self.marker(harness, phone) }

            var frames = client.received.makeAsyncIterator()
            let first = try #require(await LiveClient.next(&frames))
            #expect(first["type"] as? String == "chat_event" && first["conversation"] as? String == "chat-1")
            let event = try #require(first["event"] as? [String: Any])
            #expect(Set(event.keys) == ["position", "type", "from", "from_agent", "text", "at"])
            #expect(event["position"] as? Int == 1 && event["type"] as? String == "Message.Text")
            #expect(event["text"] as? String == "Welcome / hi" && event["from_agent"] as? Bool == true)
            #expect((event["from"] as? [String: Any])?["name"] as? String == "Dana")
            // The typing notice (2) and the customer's own line (3) were not sent.
            let second = try #require(await LiveClient.next(&frames))
            #expect((second["event"] as? [String: Any])?["position"] as? Int == 4)
            #expect((second["event"] as? [String: Any])?["text"] as? String == "Your order shipped")
            #expect(try #require(await LiveClient.next(&frames))["call_id"] as? String == "marker")

            // The frame carries what the transcript gives the device, in the same shape.
            let transcript = try await harness.call(
                .GET,
                "/v1/chats/chat-1/transcript?after=3",
                auth: .bearer(onScreen.credential)
            ).decode(TranscriptView.self)
            #expect(
                LiveServerFrame(
                    jsonText: String(decoding: try JSONSerialization.data(withJSONObject: second), as: UTF8.self)
                )
                    == .chatEvent(conversation: "chat-1", event: try #require(transcript.events.first))
            )

            // The disconnected device and the other user's device got nothing before the marker.
            for other in [awayClient, strangerClient] {
                var iterator = other.received.makeAsyncIterator()
                #expect(try #require(await LiveClient.next(&iterator))["call_id"] as? String == "marker")
            }
            // No push for anyone but the disconnected device's timer, and nothing for the device
            // without a channel.
            #expect(harness.accepted(token: noChannel.messagingToken).isEmpty)
            #expect(harness.accepted(token: onScreen.messagingToken).isEmpty)
        }
    }
}
