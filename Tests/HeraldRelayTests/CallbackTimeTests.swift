import Foundation
import HeraldHTTPSupport
import HeraldRelayAPI
import Testing

/// Callback times in milliseconds (issue 32 item 6): `at` and `expires` taken as a JSON integer or
/// as RFC 3339 text, and every time answered both ways, the same instant.
@Suite("Callback times", .timeLimit(.minutes(2)))
struct CallbackTimeTests {
    static func request(_ fields: String) throws(JSONBodyError) -> CallbackRequest {
        try JSONBody.decode(CallbackRequest.self, from: Array(#"{"user_id":"u","service_id":"s",\#(fields)}"#.utf8))
    }

    /// An integer of the answer's JSON, as milliseconds.
    static func milliseconds(_ value: Any?) -> Int64? { (value as? NSNumber)?.int64Value }

    @Test("a JSON integer is milliseconds, a JSON string RFC 3339; both name the same instant")
    func bothForms() throws {
        let number = try Self.request(#""at":1795600800000,"expires":1795604400000"#)
        #expect(number.at == .milliseconds(1_795_600_800_000))
        #expect(number.expires == .milliseconds(1_795_604_400_000))
        let text = try Self.request(#""at":"2026-11-25T10:00:00Z","expires":"2026-11-25T11:00:00.000+00:00""#)
        #expect(text.at == .text("2026-11-25T10:00:00Z"))
        #expect(text.at?.epochMilliseconds == number.at?.epochMilliseconds)
        #expect(text.expires?.epochMilliseconds == number.expires?.epochMilliseconds)
        // Digits in a string are not milliseconds: the JSON type decides, not the text.
        let digits = try Self.request(#""at":"1795600800000""#)
        #expect(digits.at == .text("1795600800000") && digits.at?.epochMilliseconds == nil)
        #expect(try Self.request(#""at":null"#).at == nil)
    }

    @Test(
        "any other JSON type is refused, naming the field",
        arguments: [
            #""at":true"#, #""at":1.5"#, #""at":{"ms":1}"#, #""at":[1795600800000]"#,
            #""expires":false"#, #""expires":18446744073709551616"#,
        ]
    )
    func otherTypesRefused(fields: String) throws {
        let field = fields.hasPrefix(#""at""#) ? "at" : "expires"
        #expect {
            try Self.request(fields)
        } throws: { error in
            guard let error = error as? JSONBodyError else { return false }
            return error.field == field
                && error.reason == "must be milliseconds since the epoch (an integer) or an RFC 3339 string"
        }
    }

    @Test("over HTTP: a wrong type or a time out of range is 400 naming the field")
    func refusedOverHTTP() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            _ = try await harness.phone(user: "ivy")
            let now = harness.clock.now()
            let cases: [(fields: String, field: String)] = [
                (#""at":true"#, "at"),
                (#""expires":"soon""#, "expires"),
                (#""at":-1"#, "at"),
                (#""expires":253402300800000"#, "expires"),
                (#""at":\#(now - 60_000)"#, "at"),
                (#""at":\#(now + 60_000),"expires":\#(now + 30_000)"#, "expires"),
            ]
            for item in cases {
                let reply = try await harness.call(
                    .POST,
                    "/v1/callbacks",
                    body: #"{"user_id":"ivy","service_id":"s",\#(item.fields)}"#
                )
                #expect(reply.status == 400, "\(item.fields): \(reply.text)")
                #expect(reply.json["field"] as? String == item.field, "\(item.fields): \(reply.text)")
            }
        }
    }

    @Test("an integer `at` is pushed at that time; answers and the webhook carry each time both ways")
    func integerAtPushedThen() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            let phone = try await harness.phone(user: "jude")
            // Exact times: the clock moves only when the test moves it.
            harness.clock.freeze()
            let now = harness.clock.now()
            let due = now + 60_000
            let expires = due + 600_000
            let reply = try await harness.call(
                .POST,
                "/v1/callbacks",
                body: #"{"user_id":"jude","service_id":"s","at":\#(due),"expires":\#(expires)}"#
            )
            #expect(reply.status == 201, "\(reply.text)")
            let json = reply.json
            #expect(Self.milliseconds(json["next_push_at_ms"]) == due)
            #expect(json["next_push_at"] as? String == RequestTime.format(due))
            #expect(Self.milliseconds(json["expires_at"]) == expires)
            #expect(json["expires"] as? String == RequestTime.format(expires))
            let line = try #require((json["history"] as? [[String: Any]])?.first)
            #expect(Self.milliseconds(line["at_ms"]) == now && line["at"] as? String == RequestTime.format(now))
            #expect(Self.milliseconds(line["next_push_at_ms"]) == due)
            #expect(line["next_push_at"] as? String == RequestTime.format(due))
            let id = try reply.decode(CallbackView.self).callbackID

            // A second early: nothing is due.
            harness.clock.advance(by: .seconds(59))
            #expect(try await harness.relay.callbacks.pushDue(owner: "test") == 0)
            #expect(harness.accepted(token: phone.messagingToken).isEmpty)
            harness.clock.advance(by: .seconds(1))
            let (content, _) = try await CallbackFlowTests.dialog(harness, phone, callback: id, count: 1, sequence: 1)
            #expect(content.pushedAt == due)
            let view = try await harness.call(.GET, "/v1/callbacks/\(id)", body: nil).decode(CallbackView.self)
            #expect(view.history.first { $0.event == "pushed" }?.atMs == due)
            #expect(view.nextPushAtMs == nil && view.nextPushAt == nil && view.expiresAt == expires)

            let answer = try await harness.call(
                .POST,
                "/v1/callbacks/\(id)/actions/snooze",
                auth: .bearer(phone.credential),
                body: nil
            )
            #expect(answer.status == 200, "\(answer.text)")
            let next = due + 300_000
            #expect(Self.milliseconds(answer.json["next_push_at_ms"]) == next)
            #expect(answer.json["next_push_at"] as? String == RequestTime.format(next))
            #expect(try answer.decode(CallbackAnswerView.self).nextPushAtMs == next)

            let action = try #require(
                try await CallbackFlowTests.events(harness, callback: id).first { $0.type == "callback.action" }
            )
            let data = try #require(try JSONSerialization.jsonObject(with: Data(action.data.utf8)) as? [String: Any])
            #expect(Self.milliseconds(data["next_push_at_ms"]) == next)
            #expect(data["next_push_at"] as? String == RequestTime.format(next))
        }
    }

    @Test("a view written before the millisecond fields still reads: the SDK takes the RFC 3339 ones")
    func readsOlderAnswers() throws {
        let old = #"""
            {"callback_id":"c","user_id":"u","app":"a","state":"scheduled","expires":"2026-11-25T11:00:00.000Z",
            "next_push_at":"2026-11-25T10:00:00.000Z","pushes":0,
            "history":[{"event":"scheduled","at":"2026-11-25T09:59:00Z","state":"scheduled"}]}
            """#
        let view = try JSONDecoder().decode(CallbackView.self, from: Data(old.utf8))
        #expect(view.expiresAt == RequestTime.parse("2026-11-25T11:00:00Z"))
        #expect(view.nextPushAtMs == RequestTime.parse("2026-11-25T10:00:00Z"))
        #expect(view.history.first?.atMs == RequestTime.parse("2026-11-25T09:59:00Z"))
        // Written again, it carries both forms.
        let again = try JSONDecoder().decode(CallbackView.self, from: try JSONEncoder().encode(view))
        #expect(again == view)
    }
}
