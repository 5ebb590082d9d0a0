import Foundation
import HeraldCrypto
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

/// Push deadlines end to end (docs/receipts.md, "Deadlines that escalate"): the relay with its
/// deadline scheduler, SQLite, the dispatcher and the sandbox, on a test clock moved past the
/// deadlines. A push not shown in time gets its app's escalation once; a `shown` receipt cancels
/// it; a VoIP push the app did not report to CallKit is counted against its device.
@Suite("Deadlines", .timeLimit(.minutes(2)))
struct DeadlineTests {
    static func setup(_ rule: DeadlineRule) -> RelayHarness.Setup {
        var setup = RelayHarness.Setup.recordingEvents
        setup.servesMetrics = true
        setup.app.deadlines = [rule]
        return setup
    }

    static func send(_ harness: RelayHarness, to user: String = "rita") async throws -> String {
        let sent = try await harness.call(
            .POST,
            "/v1/messages",
            body:
                #"{"to":"\#(user)","from":{"id":"agent-7","name":"Dana"},"conversation":"c-1","text":"Are you there?"}"#
        ).decode(IngestReceipt.self)
        return try #require(sent.pushes.first?.pushID)
    }

    static func receipt(
        _ harness: RelayHarness,
        _ phone: RelayHarness.Phone,
        _ pushID: String,
        _ stage: ReceiptStage
    ) async throws {
        let keys = try phone.sessionKeys()
        let receipt = DeliveryReceipt(keyID: keys.keyID, pushID: pushID, stage: stage, deviceTime: 1)
        let reply = try await ReceiptTests.post(harness, phone, receipt)
        #expect(reply.status == 201, "\(reply.text)")
    }

    /// The data of the one event of `type` about `pushID`, once it is written.
    static func event(
        _ harness: RelayHarness,
        _ type: WebhookEventType,
        about pushID: String
    ) async throws -> [String: Any] {
        var found: WebhookEvent?
        try await eventually("a \(type.rawValue) event for \(pushID)") {
            found = try await harness.events(orderingKey: "push:" + pushID).first { $0.type == type }
            return found != nil
        }
        let event = try #require(found)
        return try #require(try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any])
    }

    @Test("a message not shown in time goes to the user's device it did not reach, once")
    func otherDevices() async throws {
        try await RelayHarness.with(Self.setup(DeadlineRule(kind: .message, after: 60, action: .otherDevices))) {
            harness in
            let first = try await harness.phone(user: "rita")
            let pushID = try await Self.send(harness)
            try await harness.push(pushID, reaches: .delivered)
            // Activated after the message: the message never went to it.
            let second = try await harness.phone(user: "rita")
            harness.clock.advance(by: .seconds(59))
            #expect(harness.accepted(token: second.messagingToken).isEmpty)

            harness.clock.advance(by: .seconds(2))
            let data = try await Self.event(harness, .pushUnseen, about: pushID)
            #expect(data["action"] as? String == "other_devices")
            #expect(data["device_id"] as? String == first.deviceID && data["user_id"] as? String == "rita")
            let added = try #require(data["pushes"] as? [[String: Any]])
            #expect(added.map { $0["device_id"] as? String } == [second.deviceID])
            let escalated = try #require(added.first?["push_id"] as? String)
            try await harness.push(escalated, reaches: .delivered)
            let sent = harness.accepted(token: second.messagingToken)
            #expect(sent.count == 1 && sent.first?.priority == "10")
            #expect(!sent[0].payload.contains("Are you there?"), "sealed like any push")

            // Never twice: the deadline is settled.
            harness.clock.advance(by: .seconds(3600))
            #expect(try await harness.store.nextDeadlineDueTime() == nil)
            #expect(try await harness.events(orderingKey: "push:" + pushID).count { $0.type == .pushUnseen } == 1)
            #expect(harness.accepted(token: second.messagingToken).count == 1)
            #expect(
                harness.metric(
                    #"herald_relay_push_escalations_total{action="other_devices",app="\#(RelayHarness.bundleID)"}"#
                ) == 1
            )
        }
    }

    @Test("a shown receipt cancels the deadline; a push not shown is sent again at priority 10")
    func shownCancelsResendRepeats() async throws {
        try await RelayHarness.with(Self.setup(DeadlineRule(kind: .message, after: 30, action: .resend))) { harness in
            let phone = try await harness.phone(user: "rita")
            let seen = try await Self.send(harness)
            let unseen = try await Self.send(harness)
            try await harness.push(seen, reaches: .delivered)
            try await harness.push(unseen, reaches: .delivered)
            try await Self.receipt(harness, phone, seen, .delivered)
            try await Self.receipt(harness, phone, seen, .shown)
            try await Self.receipt(harness, phone, unseen, .delivered)

            harness.clock.advance(by: .seconds(31))
            let data = try await Self.event(harness, .pushUnseen, about: unseen)
            #expect(data["action"] as? String == "resend")
            let again = try #require((data["pushes"] as? [[String: Any]])?.first?["push_id"] as? String)
            try await harness.push(again, reaches: .delivered)
            let sent = harness.accepted(token: phone.messagingToken)
            #expect(sent.map(\.priority) == ["5", "5", "10"])
            #expect(try await harness.events(orderingKey: "push:" + seen).allSatisfy { $0.type != .pushUnseen })
        }
    }

    @Test("ring: a message not shown in time rings the user as a call from its sender")
    func ringAsACall() async throws {
        try await RelayHarness.with(Self.setup(DeadlineRule(kind: .message, after: 10, action: .ring))) { harness in
            let phone = try await harness.phone(user: "rita")
            let pushID = try await Self.send(harness)
            harness.clock.advance(by: .seconds(11))
            let data = try await Self.event(harness, .pushUnseen, about: pushID)
            let callID = try #require(data["call_id"] as? String)
            #expect(callID == "unseen-" + pushID)
            let call = try await harness.call(.GET, "/v1/calls/\(callID)")
            #expect(call.status == 200, "\(call.text)")
            #expect(call.json["state"] as? String == "ringing")
            try await eventually("the VoIP push") {
                harness.accepted(token: phone.voipToken).contains { $0.pushType == "voip" }
            }
        }
    }

    @Test("a VoIP push PushKit delivered but the app did not report to CallKit is counted against its device")
    func callKitGuard() async throws {
        var setup = RelayHarness.Setup.recordingEvents
        setup.servesMetrics = true
        try await RelayHarness.with(setup) { harness in
            let phone = try await harness.phone(user: "rita")
            var pushes: [String] = []
            for id in ["call-1", "call-2"] {
                let rung = try await harness.call(
                    .POST,
                    "/v1/calls",
                    body: #"{"to":"rita","from":{"id":"agent-7","name":"Dana"},"call_id":"\#(id)"}"#
                ).decode(IngestReceipt.self)
                pushes.append(try #require(rung.pushes.first?.pushID))
            }
            // The first is reported (its shown receipt), the second only delivered.
            try await Self.receipt(harness, phone, pushes[0], .delivered)
            try await Self.receipt(harness, phone, pushes[0], .shown)
            try await Self.receipt(harness, phone, pushes[1], .delivered)
            harness.clock.advance(by: .seconds(31))

            let data = try await Self.event(harness, .pushCallUnreported, about: pushes[1])
            #expect(data["device_id"] as? String == phone.deviceID && data["action"] as? String == "callkit_report")
            let device = try await harness.call(.GET, "/v1/devices/\(phone.deviceID)").decode(DeviceView.self)
            #expect(device.unreportedCalls?.count == 1)
            #expect(
                try await harness.events(orderingKey: "push:" + pushes[0]).allSatisfy { $0.type != .pushCallUnreported }
            )
            #expect(
                harness.metric(#"herald_relay_calls_unreported_total{app="\#(RelayHarness.bundleID)"}"#) == 1
            )
        }
    }

    @Test("an app's deadlines are checked: one rule per kind, 1 s to a day, an app's action")
    func rulesAreChecked() async throws {
        try await RelayHarness.with { harness in
            let cases: [(String, String)] = [
                (#"[{"kind":"message","after":0,"action":"notify"}]"#, "deadlines[0].after"),
                (
                    #"[{"kind":"message","after":5,"action":"notify"},{"kind":"message","after":9,"action":"ring"}]"#,
                    "deadlines[1].kind"
                ),
                (#"[{"kind":"call","after":5,"action":"callkit_report"}]"#, "deadlines[0].action"),
                (#"[{"kind":"call","after":5,"action":"ring"}]"#, "deadlines[0].action"),
            ]
            for (rules, field) in cases {
                let reply = try await harness.call(
                    .PUT,
                    "/v1/apps/\(RelayHarness.bundleID)",
                    body: #"{"team_id":"\#(RelayHarness.teamID)","deadlines":\#(rules)}"#
                )
                #expect(reply.status == 400, "\(rules): \(reply.text)")
                #expect(reply.text.contains(field), "\(rules): \(reply.text)")
            }
            let good =
                #"[{"kind":"message","after":120,"action":"other_devices"},{"kind":"call","after":20,"action":"notify"}]"#
            let saved = try await harness.call(
                .PUT,
                "/v1/apps/\(RelayHarness.bundleID)",
                body: #"{"team_id":"\#(RelayHarness.teamID)","deadlines":\#(good)}"#
            )
            #expect(saved.status == 200, "\(saved.text)")
            let rules = try #require(saved.json["deadlines"] as? [[String: Any]])
            #expect(rules.map { $0["action"] as? String } == ["other_devices", "notify"])
        }
    }
}
