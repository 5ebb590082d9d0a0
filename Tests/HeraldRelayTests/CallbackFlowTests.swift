import Foundation
import GRDB
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldStoreSQLite

/// Callbacks end to end (seed 002): scheduled over HTTP, pushed through the sandbox when due,
/// opened as the device would, answered with the device credential.
@Suite("Callback flows", .timeLimit(.minutes(2)))
struct CallbackFlowTests {
    static func time(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// Schedules a callback for `user`; returns its view.
    static func schedule(
        _ harness: RelayHarness,
        user: String,
        extra: String = ""
    ) async throws -> CallbackView {
        let reply = try await harness.call(
            .POST,
            "/v1/callbacks",
            body: #"{"user_id":"\#(user)","service_id":"3SQI3S31693JL9L3R00506T40C000U73"\#(extra)}"#
        )
        #expect(reply.status == 201, "\(reply.text)")
        return try reply.decode(CallbackView.self)
    }

    /// Waits for the `count`-th accepted push to `phone` and opens it as push number `sequence`.
    static func dialog(
        _ harness: RelayHarness,
        _ phone: RelayHarness.Phone,
        callback: String,
        count: Int,
        sequence: UInt16
    ) async throws -> (content: CallbackContent, payload: String) {
        try await eventually("push \(count) of callback \(callback)") {
            harness.accepted(token: phone.messagingToken).count >= count
        }
        let record = harness.accepted(token: phone.messagingToken)[count - 1]
        #expect(record.priority == "10" && record.pushType == "alert" && record.topic == RelayHarness.bundleID)
        let herald = try RelayFlowTests.heraldField(record.payload)
        #expect(herald["kind"] as? String == "callback" && herald["callback_id"] as? String == callback)
        #expect(herald["push"] as? Int == Int(sequence))
        let envelope = try Envelope(text: try #require(herald["sealed"] as? String))
        let opener = EnvelopeOpener(sessionKeys: [try phone.sessionKeys()])
        let context = EnvelopeContext(kind: .callback, pushID: callback, deviceID: phone.deviceID, sequence: sequence)
        guard case .callback(let content) = try opener.openContent(envelope, context: context) else {
            Issue.record("the envelope did not hold a callback")
            throw HarnessError.timeout("callback content")
        }
        // Replayed as a message, a call, or another push of the callback: it does not open.
        for other in [
            EnvelopeContext(kind: .message, pushID: callback, deviceID: phone.deviceID),
            EnvelopeContext(kind: .call, pushID: callback, deviceID: phone.deviceID),
            EnvelopeContext(kind: .callback, pushID: callback, deviceID: phone.deviceID, sequence: sequence + 1),
        ] {
            #expect(throws: HeraldCryptoError.authenticationFailed) { try opener.open(envelope, context: other) }
        }
        return (content, record.payload)
    }

    /// The webhook events written for a callback, oldest first: type and data.
    static func events(_ harness: RelayHarness, callback: String) async throws -> [(type: String, data: String)] {
        try await harness.store.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT type, data FROM webhook_events WHERE ordering_key = ? ORDER BY sequence",
                arguments: ["callback:" + callback]
            ).map { (type: $0[0], data: $0[1]) }
        }
    }

    @Test("due now: one time-sensitive alert, the dialog sealed; ready connects; state, history and events")
    func readyConnects() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            let phone = try await harness.phone(user: "alice")
            let scheduled = try await Self.schedule(harness, user: "alice")
            #expect(scheduled.state == .scheduled && scheduled.app == RelayHarness.bundleID)
            let (content, payload) = try await Self.dialog(
                harness,
                phone,
                callback: scheduled.callbackID,
                count: 1,
                sequence: 1
            )
            #expect(content.serviceID == "3SQI3S31693JL9L3R00506T40C000U73")
            #expect(content.dialog == .standard)
            for secret in ["3SQI3S31693JL9L3R00506T40C000U73", "ready to talk", "Agent is available"] {
                #expect(!payload.contains(secret))
            }
            let object = try #require(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
            let aps = try #require(object["aps"] as? [String: Any])
            #expect(aps["category"] as? String == CallbackPayload.category)
            #expect(aps["mutable-content"] as? Int == 1)
            #expect(aps["interruption-level"] as? String == "time-sensitive")

            let answer = try await harness.call(
                .POST,
                "/v1/callbacks/\(scheduled.callbackID)/actions/ready",
                auth: .bearer(phone.credential),
                body: nil
            )
            #expect(answer.status == 200, "\(answer.text)")
            let answered = try answer.decode(CallbackAnswerView.self)
            #expect(answered.state == .connected && answered.kind == "connect" && answered.nextPushAt == nil)

            for auth in [RelayHarness.Auth.apiKey, .bearer(phone.credential)] {
                let view = try await harness.call(.GET, "/v1/callbacks/\(scheduled.callbackID)", auth: auth, body: nil)
                    .decode(CallbackView.self)
                #expect(view.state == .connected && view.pushes == 1 && view.lastAction == "ready")
                #expect(view.history.map(\.event) == ["scheduled", "pushed", "action"])
                #expect(view.history.map(\.push) == [nil, 1, nil])
            }
            let events = try await Self.events(harness, callback: scheduled.callbackID)
            #expect(events.map(\.type) == ["callback.pushed", "callback.action"])
            #expect(events.last?.data.contains(#""action":"ready""#) == true)
            #expect(events.last?.data.contains(#""state":"connected""#) == true)
            #expect(!events.contains { $0.data.contains("ready to talk") || $0.data.contains("3SQI3S") })
        }
    }

    @Test("snooze: scheduled again; the second push comes after the delay (test clock), as push 2")
    func snoozeBringsSecondPush() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            let phone = try await harness.phone(user: "bob")
            let scheduled = try await Self.schedule(harness, user: "bob")
            _ = try await Self.dialog(harness, phone, callback: scheduled.callbackID, count: 1, sequence: 1)
            let answer = try await harness.call(
                .POST,
                "/v1/callbacks/\(scheduled.callbackID)/actions/snooze",
                auth: .bearer(phone.credential),
                body: nil
            )
            let snoozed = try answer.decode(CallbackAnswerView.self)
            #expect(snoozed.state == .scheduled && snoozed.nextPushAt != nil)
            // Not before its time: a second answer now is refused, and no push comes.
            let early = try await harness.call(
                .POST,
                "/v1/callbacks/\(scheduled.callbackID)/actions/ready",
                auth: .bearer(phone.credential),
                body: nil
            )
            #expect(early.status == 409 && early.text.contains("not waiting for an answer"))
            #expect(harness.accepted(token: phone.messagingToken).count == 1)

            harness.clock.advance(by: .seconds(300))
            let (content, _) = try await Self.dialog(
                harness,
                phone,
                callback: scheduled.callbackID,
                count: 2,
                sequence: 2
            )
            #expect(content.sequence == 2)
            let ready = try await harness.call(
                .POST,
                "/v1/callbacks/\(scheduled.callbackID)/actions/ready",
                auth: .bearer(phone.credential),
                body: nil
            )
            #expect(try ready.decode(CallbackAnswerView.self).state == .connected)
            let events = try await Self.events(harness, callback: scheduled.callbackID)
            #expect(
                events.map(\.type) == ["callback.pushed", "callback.action", "callback.pushed", "callback.action"]
            )
            #expect(events[1].data.contains("next_push_at"))
        }
    }

    @Test("cancel: cancelled; a second answer is refused 409")
    func cancelCancels() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            let phone = try await harness.phone(user: "carol")
            let scheduled = try await Self.schedule(harness, user: "carol")
            _ = try await Self.dialog(harness, phone, callback: scheduled.callbackID, count: 1, sequence: 1)
            let path = "/v1/callbacks/\(scheduled.callbackID)/actions/cancel"
            let cancel = try await harness.call(.POST, path, auth: .bearer(phone.credential), body: nil)
            #expect(try cancel.decode(CallbackAnswerView.self).state == .cancelled)
            let again = try await harness.call(.POST, path, auth: .bearer(phone.credential), body: nil)
            #expect(again.status == 409 && again.text.contains("cancelled already"))
        }
    }

    @Test("unanswered past its expiration: expired, reported; an answer then is refused")
    func expiresUnanswered() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            let phone = try await harness.phone(user: "dave")
            let expires = Self.time(harness.clock.now() + 60_000)
            let scheduled = try await Self.schedule(harness, user: "dave", extra: #","expires":"\#(expires)""#)
            _ = try await Self.dialog(harness, phone, callback: scheduled.callbackID, count: 1, sequence: 1)
            // Reported once the relay recorded APNs' answer; an outcome recorded after the
            // expiry would report nothing (the expiry is a callback's last event).
            try await eventually("callback.pushed") {
                try await Self.events(harness, callback: scheduled.callbackID).map(\.type) == ["callback.pushed"]
            }
            harness.clock.advance(by: .seconds(61))
            try await eventually("the callback to expire") {
                try await harness.relay.callbacks.callback(id: scheduled.callbackID).state == .expired
            }
            let late = try await harness.call(
                .POST,
                "/v1/callbacks/\(scheduled.callbackID)/actions/ready",
                auth: .bearer(phone.credential),
                body: nil
            )
            #expect(late.status == 409 && late.text.contains("expired already"))
            let events = try await Self.events(harness, callback: scheduled.callbackID)
            #expect(events.map(\.type) == ["callback.pushed", "callback.expired"])
        }
    }

    @Test("bad input refused with a JSON reason: 400, 401, 403, 404, 409")
    func badInput() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            let phone = try await harness.phone(user: "erin")
            let stranger = try await harness.phone(user: "frank")
            let now = harness.clock.now()
            let cases: [(body: String, status: Int, reason: String)] = [
                (
                    #"{"user_id":"erin","service_id":"s","at":"\#(Self.time(now - 60_000))"}"#, 400,
                    "'at' is in the past"
                ),
                (#"{"user_id":"erin","service_id":"s","at":"yesterday"}"#, 400, "RFC 3339"),
                (
                    #"{"user_id":"erin","service_id":"s","at":"\#(Self.time(now + 60_000))","expires":"\#(Self.time(now + 30_000))"}"#,
                    400, "'expires' must be after"
                ),
                (
                    #"{"user_id":"erin","service_id":"s","dialog":{"title":"t","text":"x","actions":[{"id":"a","label":"A","kind":"connect"},{"id":"a","label":"B","kind":"cancel"}]}}"#,
                    400, "repeats an earlier id"
                ),
                (
                    #"{"user_id":"erin","service_id":"s","dialog":{"title":"t","text":"x","actions":[]}}"#,
                    400, "1 to 4 actions"
                ),
                (
                    #"{"user_id":"erin","service_id":"s","dialog":{"title":"t","text":"x","actions":[{"id":"z","label":"Z","kind":"snooze"}]}}"#,
                    400, "required for a snooze"
                ),
                (
                    #"{"user_id":"erin","service_id":"s","dialog":{"title":"t","text":"x","actions":[{"id":"z","label":"Z","kind":"dance"}]}}"#,
                    400, "'connect', 'snooze' or 'cancel'"
                ),
                (#"{"user_id":"nobody","service_id":"s"}"#, 400, "has no device"),
            ]
            for item in cases {
                let reply = try await harness.call(.POST, "/v1/callbacks", body: item.body)
                #expect(reply.status == item.status, "\(item.body): \(reply.text)")
                #expect(reply.text.contains(item.reason), "\(item.body): \(reply.text)")
            }
            // A dialog that cannot fit in a push: every field at its longest.
            let long = String(repeating: "x", count: 256)
            let text = String(repeating: "y", count: 2048)
            let actions = (0..<4).map { #"{"id":"a\#($0)","label":"\#(long)","kind":"cancel"}"# }.joined(separator: ",")
            let big = try await harness.call(
                .POST,
                "/v1/callbacks",
                body:
                    #"{"user_id":"erin","service_id":"\#(long)","dialog":{"title":"\#(long)","text":"\#(text)","actions":[\#(actions)]}}"#
            )
            #expect(big.status == 400 && big.text.contains("does not fit in a push"), "\(big.text)")

            let unauthorized = try await harness.call(.POST, "/v1/callbacks", auth: .none, body: "{}")
            #expect(unauthorized.status == 401)

            let scheduled = try await Self.schedule(harness, user: "erin")
            let base = "/v1/callbacks/\(scheduled.callbackID)"
            let unknown = try await harness.call(.GET, "/v1/callbacks/nope", body: nil)
            #expect(unknown.status == 404 && unknown.text.contains("no callback nope"))
            let foreign = try await harness.call(.GET, base, auth: .bearer(stranger.credential), body: nil)
            #expect(foreign.status == 403)
            _ = try await Self.dialog(harness, phone, callback: scheduled.callbackID, count: 1, sequence: 1)
            let strangerAnswer = try await harness.call(
                .POST,
                base + "/actions/ready",
                auth: .bearer(stranger.credential),
                body: nil
            )
            #expect(strangerAnswer.status == 403)
            let notOffered = try await harness.call(
                .POST,
                base + "/actions/dance",
                auth: .bearer(phone.credential),
                body: nil
            )
            #expect(notOffered.status == 400 && notOffered.text.contains("not one the dialog offered"))
            let byKey = try await harness.call(.POST, base + "/actions/ready", body: nil)
            #expect(byKey.status == 403)
            let unknownAnswer = try await harness.call(
                .POST,
                "/v1/callbacks/nope/actions/ready",
                auth: .bearer(phone.credential),
                body: nil
            )
            #expect(unknownAnswer.status == 404)
        }
    }

    @Test("an idempotency key schedules once: the repeat answers the first callback")
    func idempotent() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            _ = try await harness.phone(user: "gina")
            let first = try await Self.schedule(harness, user: "gina", extra: #","idempotency_key":"cb-1""#)
            let again = try await harness.call(
                .POST,
                "/v1/callbacks",
                body: #"{"user_id":"gina","service_id":"s2","idempotency_key":"cb-1"}"#
            )
            #expect(again.status == 200)
            let repeated = try again.decode(CallbackView.self)
            #expect(repeated.callbackID == first.callbackID && repeated.duplicate == true)
        }
    }
}
