import Foundation
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

/// An app's queue order (docs/relay.md, "Queue order"): `customer_wait` sends the pushes of the
/// customers who waited longest for the agent first (seed 000, at peak), `queue_time` (the
/// default) the longest in the queue; calls first either way.
@Suite("Queue order", .timeLimit(.minutes(2)))
struct QueueOrderTests {
    static func message(to user: String, waitingSince: Int64? = nil, conversation: String = "c-1") -> String {
        var body: [String: Any] = [
            "to": user, "from": ["id": "agent-7", "name": "Dana Agent"], "conversation": conversation,
            "text": "An answer for \(user)",
        ]
        if let waitingSince { body["waiting_since"] = waitingSince }
        return String(decoding: try! JSONSerialization.data(withJSONObject: body), as: UTF8.self)
    }

    @Test(
        "a backlog held by an APNs outage reaches APNs by the customer's wait (customer_wait) or by time in the queue (queue_time), the call first",
        arguments: [QueueOrder.customerWait, .queueTime]
    )
    func backlogOrder(_ order: QueueOrder) async throws {
        var setup = RelayHarness.Setup()
        setup.app.queueOrder = order
        // One push per claim, one loop: the order of arrival at the sandbox is the claim's.
        setup.dispatcher = {
            $0.workers = 1
            $0.batchSize = 1
        }
        try await RelayHarness.with(setup) { harness in
            let users = ["ann", "ben", "cat", "dan"]
            var phones: [String: RelayHarness.Phone] = [:]
            for user in users { phones[user] = try await harness.phone(user: user) }
            // Connections are up before the outage.
            let warmUp = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "ann"))
            try await harness.push(
                try #require(try warmUp.decode(IngestReceipt.self).pushes.first?.pushID),
                reaches: .delivered
            )

            let up = #"herald_relay_network_up{network="apns"}"#
            harness.sandbox.apnsServer.beUnreachable(for: .seconds(60))
            let now = harness.clock.now()
            // Queued in this order; the customers waited 10 s, 5 min, (not said), 1 min.
            let waits: [String: Int64?] = ["ann": now - 10_000, "ben": now - 300_000, "cat": nil, "dan": now - 60_000]
            var pushIDs: [String] = []
            for user in users {
                let reply = try await harness.call(
                    .POST,
                    "/v1/messages",
                    body: Self.message(to: user, waitingSince: waits[user]!)
                )
                #expect(reply.status == 202, "\(reply.text)")
                pushIDs += try reply.decode(IngestReceipt.self).pushes.map(\.pushID)
            }
            let call = try await harness.call(
                .POST,
                "/v1/calls",
                body: #"{"to":"cat","from":{"id":"agent-7","name":"Dana"},"call_id":"call-cat"}"#
            )
            #expect(call.status == 202)
            pushIDs += try call.decode(IngestReceipt.self).pushes.map(\.pushID)
            for id in pushIDs.prefix(4) {
                let status = try await harness.relay.ingest.pushStatus(id: id)
                #expect((status.waitingSince != nil) == (order == .customerWait), "\(id): \(status)")
            }

            try await eventually("the relay to mark APNs down") { harness.metric(up) == 0 }
            // Two probes held since the call was queued: the second was claimed after it, so
            // the probe that finds APNs back takes the queue's first push.
            let held = "herald_relay_pushes_held_total"
            let heldBefore = harness.metric(held)
            try await eventually("two probes after the call") { harness.metric(held) >= heldBefore + 2 }
            let released = Int64(Date().timeIntervalSince1970 * 1000)
            harness.sandbox.apnsServer.endOutage()
            for id in pushIDs { try await harness.push(id, reaches: .delivered, timeout: .seconds(20)) }

            var arrivals: [(at: Int64, sequence: Int, who: String)] = []
            for user in users {
                let phone = try #require(phones[user])
                for record in harness.accepted(token: phone.messagingToken) where record.receivedAt >= released {
                    arrivals.append((record.receivedAt, record.sequence, user))
                }
                for record in harness.accepted(token: phone.voipToken) where record.receivedAt >= released {
                    arrivals.append((record.receivedAt, record.sequence, "call:" + user))
                }
            }
            let order = arrivals.sorted { ($0.at, $0.sequence) < ($1.at, $1.sequence) }.map(\.who)
            switch setup.app.queueOrder {
            case .customerWait:
                // ben waited 5 min, dan 1 min, ann 10 s; cat's wait is unknown: its time in the queue.
                #expect(order == ["call:cat", "ben", "dan", "ann", "cat"])
            case .queueTime:
                #expect(order == ["call:cat", "ann", "ben", "cat", "dan"])
            }
        }
    }

    @Test("a chat push of a customer_wait app waits since the customer's oldest unanswered message")
    func chatWait() async throws {
        var setup = RelayHarness.Setup()
        setup.app.queueOrder = .customerWait
        setup.relay.chat.firstPushDelay = .zero
        try await RelayHarness.with(setup) { harness in
            let phone = try await harness.phone(user: "cust")
            harness.clock.freeze()
            func event(_ type: String = "Message.Text", agent: Bool) async throws -> ChatEventReceipt {
                let body =
                    #"{"to":"cust","type":"\#(type)","from":{"id":"x","name":"X"},"text":"t","from_agent":\#(agent)}"#
                let reply = try await harness.call(.POST, "/v1/chats/chat-w/events", body: body)
                #expect(reply.status == 202, "\(reply.text)")
                return try reply.decode(ChatEventReceipt.self)
            }
            _ = try await event(agent: true)  // 1: the agent's greeting
            harness.clock.advance(by: .seconds(5))
            let asked = harness.clock.now()
            _ = try await event(agent: false)  // 2: the question the customer waits on
            harness.clock.advance(by: .seconds(5))
            _ = try await event(agent: false)  // 3: asked again: the wait began at 2
            _ = try await event("Notice.TypingStarted", agent: true)  // 4: a notice answers nothing
            let disconnect = try await harness.call(
                .POST,
                "/v1/devices/\(phone.deviceID)/chats/chat-w/disconnect",
                auth: .bearer(phone.credential),
                body: #"{"transcript_position":4}"#
            )
            #expect(disconnect.status == 200)
            harness.clock.advance(by: .seconds(120))
            let answer = try await event(agent: true)  // 5: the answer, pushed
            let first = try #require(answer.pushes.first)
            #expect(try await harness.relay.ingest.pushStatus(id: first.pushID).waitingSince == asked)

            // The agent writes again at once: nothing of the customer's waits, so the push
            // stands by its own time in the queue.
            harness.clock.advance(by: .seconds(1))
            let again = try await event(agent: true)
            let second = try #require(again.pushes.first)
            let status = try await harness.relay.ingest.pushStatus(id: second.pushID)
            #expect(status.waitingSince == status.createdAt)
        }
    }

    @Test("an app of the configuration file names its queue order; queue_time when left out")
    func queueOrderInTheFile() throws {
        let decode = { (json: String) throws -> AppRecord in
            try JSONDecoder().decode(AppRecord.self, from: Data(json.utf8))
        }
        #expect(try decode(#"{"id":"a.b","team_id":"T","queue_order":"customer_wait"}"#).queueOrder == .customerWait)
        #expect(try decode(#"{"id":"a.b","team_id":"T"}"#).queueOrder == .queueTime)
        #expect(throws: DecodingError.self) { try decode(#"{"id":"a.b","team_id":"T","queue_order":"fifo"}"#) }
    }

    @Test("queue_order is set per app and shown; a bad one and a bad waiting_since get a 400 naming the field")
    func refusals() async throws {
        try await RelayHarness.with { harness in
            let path = "/v1/apps/\(RelayHarness.bundleID)"
            let put = try await harness.call(
                .PUT,
                path,
                body: #"{"team_id":"\#(RelayHarness.teamID)","queue_order":"customer_wait"}"#
            )
            #expect(put.status == 200 && put.json["queue_order"] as? String == "customer_wait", "\(put.text)")
            let bad = try await harness.call(
                .PUT,
                path,
                body: #"{"team_id":"\#(RelayHarness.teamID)","queue_order":"fifo"}"#
            )
            #expect(bad.status == 400, "\(bad.text)")
            #expect(bad.text.contains("queue_order"), "\(bad.text)")

            _ = try await harness.phone(user: "eve")
            let now = harness.clock.now()
            for (since, words) in [(now + 120_000, "in the future"), (now / 1000, "28 days")] {
                let reply = try await harness.call(
                    .POST,
                    "/v1/messages",
                    body: Self.message(to: "eve", waitingSince: since)
                )
                #expect(reply.status == 400, "\(reply.text)")
                #expect(reply.json["field"] as? String == "waiting_since")
                #expect((reply.json["reason"] as? String)?.contains(words) == true, "\(reply.text)")
            }
            // A little ahead (the backend's clock) counts as now.
            let ahead = try await harness.call(
                .POST,
                "/v1/messages",
                body: Self.message(to: "eve", waitingSince: now + 5_000)
            )
            #expect(ahead.status == 202, "\(ahead.text)")
            let pushID = try #require(try ahead.decode(IngestReceipt.self).pushes.first?.pushID)
            let status = try await harness.relay.ingest.pushStatus(id: pushID)
            #expect(status.waitingSince == status.createdAt)
        }
    }
}
