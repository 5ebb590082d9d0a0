import Foundation
import GRDB
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldSimulation
import HeraldStore
import HeraldTestSupport
import Synchronization
import Testing

@testable import HeraldStoreSQLite

/// A call's life over the real relay and sandbox: devices report ringing and answer over their
/// live channels; the others stop; the backend cancels; nobody answering makes a missed-call
/// alert; another user's device is refused; two answers at once have one winner.
@Suite("Call flow", .timeLimit(.minutes(2)))
struct CallFlowTests {
    static func ring(
        _ harness: RelayHarness,
        _ user: String,
        call: String,
        ttl: Int? = nil
    ) async throws -> IngestReceipt {
        let ttlField = ttl.map { #","ttl":\#($0)"# } ?? ""
        let reply = try await harness.call(
            .POST,
            "/v1/calls",
            body: #"{"to":"\#(user)","from":{"id":"agent-7","name":"Dana Agent"},"call_id":"\#(call)"\#(ttlField)}"#
        )
        try #require(reply.status == 202, "the call answered \(reply.status): \(reply.text)")
        return try reply.decode(IngestReceipt.self)
    }

    /// The webhook events written for a call, in order: (type, data).
    static func events(_ harness: RelayHarness, call: String) async throws -> [(type: String, data: [String: String])] {
        let rows = try await harness.store.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT type, data FROM webhook_events WHERE ordering_key = ? ORDER BY sequence",
                arguments: ["call:" + call]
            ).map { row -> (String, String) in (row[0], row[1]) }
        }
        return try rows.map { type, data in
            (type, try JSONDecoder().decode([String: String].self, from: Data(data.utf8)))
        }
    }

    /// A live channel, open once the relay knows it.
    static func channel(_ harness: RelayHarness, _ phone: RelayHarness.Phone) async throws -> LiveClient {
        let client = LiveClient(harness: harness, phone: phone)
        try await eventually("the live channel of \(phone.deviceID)") {
            harness.relay.live.isOpen(deviceID: phone.deviceID)
        }
        return client
    }

    /// The frames a channel receives, read in order, each waited for (as it arrives) at most a
    /// given time.
    final class Frames: Sendable {
        private let received = Recorded<String>()
        private let read = Mutex(0)
        private let task = Mutex<Task<Void, Never>?>(nil)

        init(_ client: LiveClient) {
            let reading = Task { [received] in
                for await text in client.received { received.append(contentsOf: [text]) }
            }
            task.withLock { $0 = reading }
        }

        deinit { task.withLock { $0?.cancel() } }

        /// The next frame, failing if none came within `within`.
        func next(within: Duration = .seconds(5)) async throws -> LiveServerFrame {
            let count = read.withLock { read in
                read += 1
                return read
            }
            let text = try await received.wait(forCount: count, within: within, "a frame within \(within)")[count - 1]
            return try #require(LiveServerFrame(jsonText: text), "not a frame: \(text)")
        }
    }

    @Test("two phones ring; one answers over its channel; the other gets call.stop within a second")
    func answeredElsewhere() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            let phone = try await harness.phone(user: "alice")
            let pad = try await harness.phone(user: "alice")
            let receipt = try await Self.ring(harness, "alice", call: "call-1")
            #expect(Set(receipt.pushes.map(\.deviceID)) == [phone.deviceID, pad.deviceID])
            let phoneChannel = try await Self.channel(harness, phone)
            let padChannel = try await Self.channel(harness, pad)
            let phoneFrames = Frames(phoneChannel)
            let padFrames = Frames(padChannel)

            phoneChannel.send(LiveClientFrame.callRinging(callID: "call-1").jsonText())
            #expect(
                try await phoneFrames.next()
                    == .callState(callID: "call-1", state: .ringing, deviceID: nil, accepted: true)
            )
            padChannel.send(LiveClientFrame.callRinging(callID: "call-1").jsonText())
            _ = try await padFrames.next()

            let answeredAt = ContinuousClock.now
            padChannel.send(LiveClientFrame.callAnswer(callID: "call-1").jsonText())
            #expect(
                try await phoneFrames.next(within: .seconds(1))
                    == .callStop(callID: "call-1", reason: .answeredElsewhere, state: .answered)
            )
            #expect(ContinuousClock.now - answeredAt < .seconds(1))
            #expect(
                try await padFrames.next()
                    == .callState(callID: "call-1", state: .answered, deviceID: pad.deviceID, accepted: true)
            )

            let view = try await harness.call(.GET, "/v1/calls/call-1").decode(CallView.self)
            #expect(view.state == .answered && view.answeredBy == pad.deviceID && view.ringingAt != nil)
            let reports = Dictionary(uniqueKeysWithValues: view.devices.map { ($0.deviceID, $0.report) })
            #expect(reports == [phone.deviceID: .ringing, pad.deviceID: .answered])

            // One `call.ringing` (the first report), then `call.answered`; no caller name.
            let events = try await Self.events(harness, call: "call-1")
            #expect(events.map(\.type) == ["call.ringing", "call.answered"])
            #expect(
                events.last?.data == [
                    "call_id": "call-1", "user_id": "alice", "state": "answered", "device_id": pad.deviceID,
                ]
            )
            #expect(events.first?.data["device_id"] == phone.deviceID)

            // The phone answering late is told the call was answered elsewhere.
            let late = try await harness.call(.POST, "/v1/calls/call-1/answer", auth: .bearer(phone.credential))
            #expect(late.status == 409)
            #expect((late.json["reason"] as? String)?.contains("answered already") == true)
            // The device may read its user's call.
            let read = try await harness.call(.GET, "/v1/calls/call-1", auth: .bearer(phone.credential))
            #expect(read.status == 200)
            // No push was sent to stop the phone: only the two VoIP pushes of the call.
            for device in [phone, pad] {
                try await eventually("the VoIP push") { !harness.accepted(token: device.voipToken).isEmpty }
                #expect(harness.accepted(token: device.voipToken).count == 1)
                #expect(harness.accepted(token: device.messagingToken).isEmpty)
            }
            phoneChannel.close()
            padChannel.close()
        }
    }

    @Test("the backend cancels: every ringing device stops (remote_ended); a second cancel is 409, an unknown call 404")
    func cancelled() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            let phone = try await harness.phone(user: "bob")
            _ = try await Self.ring(harness, "bob", call: "call-2")
            let channel = try await Self.channel(harness, phone)
            let frames = Frames(channel)
            channel.send(LiveClientFrame.callRinging(callID: "call-2").jsonText())
            _ = try await frames.next()

            let cancel = try await harness.call(.POST, "/v1/calls/call-2/cancel")
            #expect(cancel.status == 200)
            #expect(try cancel.decode(CallView.self).state == .cancelled)
            #expect(
                try await frames.next(within: .seconds(1))
                    == .callStop(callID: "call-2", reason: .remoteEnded, state: .cancelled)
            )
            #expect(
                try await Self.events(harness, call: "call-2").map(\.data) == [
                    ["call_id": "call-2", "user_id": "bob", "state": "ringing", "device_id": phone.deviceID],
                    ["call_id": "call-2", "user_id": "bob", "state": "cancelled", "reason": "remote_ended"],
                ]
            )
            let again = try await harness.call(.POST, "/v1/calls/call-2/cancel")
            #expect(again.status == 409 && again.json["error"] as? String == "conflict")
            let unknown = try await harness.call(.POST, "/v1/calls/nope/cancel")
            #expect(unknown.status == 404 && unknown.json["error"] as? String == "not_found")
            #expect(try await harness.call(.GET, "/v1/calls/nope").status == 404)
            // A device reporting ringing after the call ended is stopped at once.
            channel.send(LiveClientFrame.callRinging(callID: "call-2").jsonText())
            #expect(
                try await frames.next()
                    == .callStop(callID: "call-2", reason: .remoteEnded, state: .cancelled)
            )
            // The device credential may not cancel.
            #expect(
                try await harness.call(.POST, "/v1/calls/call-2/cancel", auth: .bearer(phone.credential)).status == 403
            )
            channel.close()
        }
    }

    @Test("nobody answers: the call is missed, its devices stop (unanswered), and each gets a sealed missed-call alert")
    func missed() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            let phone = try await harness.phone(user: "carol")
            _ = try await Self.ring(harness, "carol", call: "call-3", ttl: 20)
            let channel = try await Self.channel(harness, phone)
            let frames = Frames(channel)
            harness.clock.advance(by: .seconds(21))
            #expect(
                try await frames.next()
                    == .callStop(callID: "call-3", reason: .unanswered, state: .missed)
            )
            let view = try await harness.call(.GET, "/v1/calls/call-3").decode(CallView.self)
            #expect(view.state == .missed && view.reason == "unanswered")
            #expect(try await Self.events(harness, call: "call-3").map(\.type) == ["call.missed"])

            try await eventually("the missed-call alert") {
                !harness.accepted(token: phone.messagingToken).isEmpty
            }
            let alerts = harness.accepted(token: phone.messagingToken)
            #expect(alerts.count == 1)
            let alert = try #require(alerts.first)
            #expect(alert.pushType == "alert" && alert.priority == "5")
            #expect(!alert.payload.contains("Dana"))
            #expect(alert.payload.contains("Missed call"))
            let herald = try RelayFlowTests.heraldField(alert.payload)
            #expect(herald["kind"] as? String == "missed_call" && herald["call_id"] as? String == "call-3")
            let envelope = try Envelope(text: try #require(herald["sealed"] as? String))
            let opener = EnvelopeOpener(sessionKeys: [try phone.sessionKeys()])
            let content = try opener.openContent(
                envelope,
                context: EnvelopeContext(kind: .missedCall, pushID: "call-3", deviceID: phone.deviceID)
            )
            #expect(
                content
                    == .missedCall(
                        CallContent(
                            callID: "call-3",
                            callerID: "agent-7",
                            callerName: "Dana Agent",
                            media: .audio,
                            startedAt: view.createdAt
                        )
                    )
            )
            // Sealed as a missed call, it does not open as a call or a message.
            for kind in [PushKind.call, .message] {
                #expect(throws: HeraldCryptoError.self) {
                    try opener.openContent(
                        envelope,
                        context: EnvelopeContext(kind: kind, pushID: "call-3", deviceID: phone.deviceID)
                    )
                }
            }
            channel.close()
        }
    }

    @Test("a device of another user is refused (404) and the call rings on")
    func anotherUsersDevice() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            _ = try await harness.phone(user: "dave")
            let stranger = try await harness.phone(user: "eve")
            _ = try await Self.ring(harness, "dave", call: "call-4")
            for action in ["answer", "decline", "ringing"] {
                let reply = try await harness.call(
                    .POST,
                    "/v1/calls/call-4/\(action)",
                    auth: .bearer(stranger.credential)
                )
                #expect(reply.status == 404 && reply.json["error"] as? String == "not_found")
            }
            #expect(try await harness.call(.GET, "/v1/calls/call-4", auth: .bearer(stranger.credential)).status == 404)
            // The API key cannot answer for a device.
            #expect(try await harness.call(.POST, "/v1/calls/call-4/answer").status == 403)
            #expect(try await harness.call(.GET, "/v1/calls/call-4").decode(CallView.self).state == .ringing)
        }
    }

    @Test("two devices answering at once: exactly one wins, the other gets 409")
    func oneWinner() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            let phones = [try await harness.phone(user: "frank"), try await harness.phone(user: "frank")]
            for round in 0..<5 {
                let call = "race-\(round)"
                _ = try await Self.ring(harness, "frank", call: call)
                async let first = harness.call(.POST, "/v1/calls/\(call)/answer", auth: .bearer(phones[0].credential))
                async let second = harness.call(.POST, "/v1/calls/\(call)/answer", auth: .bearer(phones[1].credential))
                let statuses = try await [first.status, second.status]
                #expect(statuses.sorted() == [200, 409])
                let view = try await harness.call(.GET, "/v1/calls/\(call)").decode(CallView.self)
                let winner = statuses[0] == 200 ? phones[0].deviceID : phones[1].deviceID
                #expect(view.answeredBy == winner)
            }
        }
    }
}
