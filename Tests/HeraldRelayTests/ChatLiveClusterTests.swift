import AsyncHTTPClient
import Foundation
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import NIOCore
import Testing

/// Chat events over the live channel with two relay nodes on one PostgreSQL: the event is posted
/// on node B, the customer's channels are on both nodes. Each gets the `chat_event` frame but the
/// device disconnected from the chat; a typing notice and the customer's own line go nowhere.
@Suite("Chat events across relay nodes", .timeLimit(.minutes(2)))
struct ChatLiveClusterTests {
    static func event(_ type: String = "Message.Text", text: String? = nil, agent: Bool = true) -> ChatEventRequest {
        ChatEventRequest(to: "cust", type: type, from: Party(id: "agent-1", name: "Dana"), text: text, fromAgent: agent)
    }

    @Test("an event posted on node B reaches the customer's channels on node A and on B; not the disconnected one")
    func chatEventsCrossNodes() async throws {
        try await TwoNodeCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let onA = try await cluster.phone(user: "cust", on: a)
            let awayOnA = try await cluster.phone(user: "cust", on: a)
            let onB = try await cluster.phone(user: "cust", on: b)
            let stranger = try await cluster.phone(user: "someone-else", on: a)
            let clientA = try await cluster.activeChannel(onA, on: a, seenBy: b)
            let awayClient = try await cluster.activeChannel(awayOnA, on: a, seenBy: b)
            let clientB = try await cluster.activeChannel(onB, on: b, seenBy: a)
            let strangerClient = try await cluster.activeChannel(stranger, on: a, seenBy: b)
            defer { for client in [clientA, awayClient, clientB, strangerClient] { client.close() } }
            let (framesA, framesB) = (CallFlowTests.Frames(clientA), CallFlowTests.Frames(clientB))
            let (awayFrames, strangerFrames) = (CallFlowTests.Frames(awayClient), CallFlowTests.Frames(strangerClient))
            try await Self.disconnect(cluster, awayOnA, via: a)

            let welcome = try await Self.post(cluster, Self.event(text: "Welcome / hi"), via: b)
            #expect(welcome.position == 1 && welcome.scheduled == [awayOnA.deviceID])
            let typing = try await Self.post(cluster, Self.event("Notice.TypingStarted"), via: b)
            #expect(typing.filtered && typing.position == 2)
            let own = try await Self.post(cluster, Self.event(text: "my question", agent: false), via: b)
            #expect(own.filtered && own.position == 3)
            let reply = try await Self.post(cluster, Self.event(text: "Your order shipped"), via: b)
            #expect(reply.position == 4)

            // Node B's own channel, and node A's through the announcement: 1 and 4, in order.
            for frames in [framesB, framesA] {
                let first = try await Self.chatEvent(frames)
                #expect(first.position == 1 && first.text == "Welcome / hi" && first.from.name == "Dana")
                let second = try await Self.chatEvent(frames)
                #expect(second.position == 4 && second.text == "Your order shipped" && second.fromAgent)
            }
            // Node A sent event 4 to all its channels before the frame above arrived: a marker
            // sent now comes first on the channels that got no event.
            for phone in [awayOnA, stranger] {
                #expect(
                    a.relay.live.send(
                        .callStop(callID: "marker", reason: .remoteEnded, state: .cancelled),
                        to: phone.deviceID
                    )
                )
            }
            for frames in [awayFrames, strangerFrames] {
                guard case .callStop(let id, _, _) = try await frames.next(within: .seconds(10)) else {
                    Issue.record("a chat event reached a channel it must not")
                    continue
                }
                #expect(id == "marker")
            }
            // Frames only: nothing was pushed to the devices with a channel.
            #expect(cluster.accepted(token: onA.sandboxDevice.messagingToken).isEmpty)
            #expect(cluster.accepted(token: onB.sandboxDevice.messagingToken).isEmpty)
        }
    }

    /// The next frame, which must be a `chat_event` of `chat-1`.
    static func chatEvent(_ frames: CallFlowTests.Frames) async throws -> TranscriptEventView {
        let frame = try await frames.next(within: .seconds(10))
        guard case .chatEvent(let conversation, let event) = frame, conversation == "chat-1" else {
            throw UnexpectedFrame(frame: frame)
        }
        return event
    }

    struct UnexpectedFrame: Error {
        /// What came instead of a `chat_event` of `chat-1`.
        let frame: LiveServerFrame
    }

    static func post(
        _ cluster: TwoNodeCluster,
        _ event: ChatEventRequest,
        via node: TwoNodeCluster.Node
    ) async throws -> ChatEventReceipt {
        let reply = try await cluster.post("/v1/chats/chat-1/events", body: event, to: node)
        try #require(reply.status == 202, "\(String(decoding: reply.body, as: UTF8.self))")
        return try JSONDecoder().decode(ChatEventReceipt.self, from: reply.body)
    }

    /// The app says the device left the chat (as `ChatTests.disconnect`, with the device's credential).
    static func disconnect(
        _ cluster: TwoNodeCluster,
        _ phone: TwoNodeCluster.Phone,
        via node: TwoNodeCluster.Node
    ) async throws {
        var request = HTTPClientRequest(url: node.baseURL + "/v1/devices/\(phone.deviceID)/chats/chat-1/disconnect")
        request.method = .POST
        request.headers.add(name: "authorization", value: "Bearer " + phone.activation.deviceCredential)
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"transcript_position":0}"#))
        let response = try await cluster.http.execute(request, timeout: .seconds(30))
        #expect(response.status.code == 200)
    }
}
