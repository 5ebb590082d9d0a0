import Foundation
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

/// A device's notification permission (docs/relay.md, "Notification permission"), through the
/// real sandbox: a device whose user turned notifications off gets no alert, calls still ring it.
@Suite("Notification permission", .timeLimit(.minutes(2)))
struct NotificationPermissionTests {
    static func message(to user: String, text: String = "Your refund was approved") -> String {
        #"{"to":"\#(user)","from":{"id":"agent-7","name":"Dana"},"conversation":"c-1","text":"\#(text)"}"#
    }

    static func report(
        _ harness: RelayHarness,
        _ phone: RelayHarness.Phone,
        _ permission: String,
        credential: String? = nil
    ) async throws -> RelayHarness.Reply {
        try await harness.call(
            .PUT,
            "/v1/devices/\(phone.deviceID)/notifications",
            auth: .bearer(credential ?? phone.credential),
            body: #"{"permission":"\#(permission)"}"#
        )
    }

    @Test("denied: no alert to that device, its other device gets one, a call still rings it; granted again: pushed")
    func deniedDeviceGetsNoAlert() async throws {
        try await RelayHarness.with { harness in
            harness.clock.freeze()
            let denied = try await harness.phone(user: "nina")
            let other = try await harness.phone(user: "nina")
            let reply = try await Self.report(harness, denied, "denied")
            #expect(reply.status == 200, "\(reply.text)")
            let view = try reply.decode(NotificationPermissionView.self)
            #expect(view.deviceID == denied.deviceID && view.permission == .denied)
            #expect(view.updatedAt == harness.clock.now())

            let receipt = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "nina"))
                .decode(IngestReceipt.self)
            #expect(receipt.pushes.map(\.deviceID) == [other.deviceID])
            #expect(receipt.skipped == [.init(deviceID: denied.deviceID, reason: "notifications_denied")])
            try await harness.push(try #require(receipt.pushes.first?.pushID), reaches: .delivered)
            #expect(harness.accepted(token: other.messagingToken).count == 1)

            // The push listing says why the denied device got nothing.
            let listing = try await harness.call(.GET, "/v1/pushes?device=\(denied.deviceID)")
            let pushes = try #require(listing.json["pushes"] as? [[String: Any]])
            #expect(pushes.count == 1)
            #expect(pushes.first?["state"] as? String == "skipped")
            #expect(pushes.first?["reason"] as? String == "notifications_denied")
            #expect(pushes.first?["kind"] as? String == "message")
            let withheld = try #require(pushes.first?["push_id"] as? String)
            let lookup = try await harness.call(.GET, "/v1/pushes/\(withheld)")
            #expect(lookup.json["state"] as? String == "skipped", "\(lookup.text)")

            // The backend sees the permission on the device and in the user's devices.
            let device = try await harness.call(.GET, "/v1/devices/\(denied.deviceID)")
            #expect(device.json["notifications"] as? String == "denied", "\(device.text)")
            let devices = try await harness.call(.GET, "/v1/users/nina/devices")
            let listed = try #require(devices.json["devices"] as? [[String: Any]])
            let shown = Dictionary(
                uniqueKeysWithValues: listed.map { ($0["device_id"] as? String ?? "", $0["notifications"] as? String) }
            )
            #expect(shown == [denied.deviceID: "denied", other.deviceID: "granted"])

            // A call needs no permission: it rings the denied device too.
            let call = try await harness.call(
                .POST,
                "/v1/calls",
                body: #"{"to":"nina","from":{"id":"agent-7","name":"Dana"},"call_id":"call-perm-1"}"#
            ).decode(IngestReceipt.self)
            #expect(Set(call.pushes.map(\.deviceID)) == [denied.deviceID, other.deviceID])
            #expect(call.skipped.isEmpty)
            let ring = try #require(call.pushes.first { $0.deviceID == denied.deviceID })
            try await harness.push(ring.pushID, reaches: .delivered)
            #expect(harness.accepted(token: denied.voipToken).count == 1)
            #expect(harness.accepted(token: denied.messagingToken).isEmpty)

            // Allowed again: alerts reach it again.
            #expect(try await Self.report(harness, denied, "granted").status == 200)
            let again = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "nina"))
                .decode(IngestReceipt.self)
            #expect(Set(again.pushes.map(\.deviceID)) == [denied.deviceID, other.deviceID])
            #expect(again.skipped.isEmpty)
            let alert = try #require(again.pushes.first { $0.deviceID == denied.deviceID })
            try await harness.push(alert.pushID, reaches: .delivered)
            #expect(harness.accepted(token: denied.messagingToken).count == 1)
        }
    }

    /// The pushes written for a device: (kind, state, reason).
    static func pushes(_ harness: RelayHarness, device: String) async throws -> [[String?]] {
        let listing = try await harness.call(.GET, "/v1/pushes?device=\(device)")
        return try #require(listing.json["pushes"] as? [[String: Any]]).map { push in
            ["kind", "state", "reason"].map { push[$0] as? String }
        }
    }

    @Test("denied: the missed-call alert and a callback's dialog are written skipped; the other device gets both")
    func missedCallsAndCallbacks() async throws {
        try await RelayHarness.with { harness in
            let denied = try await harness.phone(user: "rita")
            let other = try await harness.phone(user: "rita")
            #expect(try await Self.report(harness, denied, "denied").status == 200)
            let ring = try await harness.call(
                .POST,
                "/v1/calls",
                body: #"{"to":"rita","from":{"id":"agent-7","name":"Dana"},"call_id":"call-perm-2","ttl":20}"#
            )
            #expect(ring.status == 202, "\(ring.text)")
            harness.clock.advance(by: .seconds(21))
            try await eventually("the other device's missed-call alert") {
                !harness.accepted(token: other.messagingToken).isEmpty
            }
            try await eventually("the denied device's alert written skipped") {
                try await Self.pushes(harness, device: denied.deviceID).contains([
                    "missed_call", "skipped", "notifications_denied",
                ])
            }

            let scheduled = try await harness.call(
                .POST,
                "/v1/callbacks",
                body: #"{"user_id":"rita","service_id":"3SQI3S31693JL9L3R00506T40C000U73"}"#
            )
            #expect(scheduled.status == 201, "\(scheduled.text)")
            try await eventually("the other device's callback push") {
                harness.accepted(token: other.messagingToken).count == 2
            }
            try await eventually("the denied device's callback written skipped") {
                try await Self.pushes(harness, device: denied.deviceID).contains([
                    "callback", "skipped", "notifications_denied",
                ])
            }
            #expect(harness.accepted(token: denied.messagingToken).isEmpty)
        }
    }

    @Test("bad bodies get 400 with the field; another device's credential and the API key 403")
    func refusals() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "omar")
            let stranger = try await harness.phone(user: "pia")
            let path = "/v1/devices/\(phone.deviceID)/notifications"
            for (body, field) in [
                (#"{"permission":"maybe"}"#, "permission"), (#"{}"#, "permission"),
                (#"{"permission":1}"#, "permission"), ("not json", "body"),
            ] {
                let reply = try await harness.call(.PUT, path, auth: .bearer(phone.credential), body: body)
                #expect(reply.status == 400, "\(body): \(reply.text)")
                #expect(reply.json["error"] as? String == "invalid_field")
                #expect(reply.json["field"] as? String == field, "\(body): \(reply.text)")
                #expect((reply.json["reason"] as? String)?.isEmpty == false)
            }
            let foreign = try await Self.report(harness, phone, "denied", credential: stranger.credential)
            #expect(foreign.status == 403, "\(foreign.text)")
            let backend = try await harness.call(.PUT, path, body: #"{"permission":"denied"}"#)
            #expect(backend.status == 403, "\(backend.text)")
            // None of them changed anything.
            #expect(try await harness.store.device(id: phone.deviceID)?.notificationPermission == .granted)
        }
    }

    @Test("a change writes one webhook event (ids, state, time); the same report again none; re-activation keeps it")
    func eventsAndReactivation() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            let phone = try await harness.phone(user: "quinn")
            for permission in ["denied", "denied", "granted", "denied"] {
                #expect(try await Self.report(harness, phone, permission).status == 200)
            }
            let events = try await harness.events(orderingKey: "device:" + phone.deviceID)
            #expect(
                events.map(\.type) == [
                    .deviceNotificationsDenied, .deviceNotificationsGranted, .deviceNotificationsDenied,
                ]
            )
            let first = try #require(events.first)
            let data = try #require(
                try JSONSerialization.jsonObject(with: Data(first.data.utf8)) as? [String: Any]
            )
            #expect(Set(data.keys) == ["device_id", "user_id", "state", "changed_at"])
            #expect(data["device_id"] as? String == phone.deviceID && data["state"] as? String == "denied")

            // Re-activation with new keys keeps the permission.
            let keys = KeyPair.generate()
            let request = ActivationRequest(
                userID: "quinn",
                app: RelayHarness.bundleID,
                platform: .ios,
                publicKey: keys.publicKey.base64,
                deviceID: phone.deviceID
            )
            let reactivated = try await harness.call(.POST, "/v1/activations", json: request)
            #expect(reactivated.status == 201, "\(reactivated.text)")
            let device = try await harness.call(.GET, "/v1/devices/\(phone.deviceID)")
            #expect(device.json["notifications"] as? String == "denied", "\(device.text)")
            // A new device starts granted.
            let fresh = try await harness.phone(user: "quinn")
            let view = try await harness.call(.GET, "/v1/devices/\(fresh.deviceID)")
            #expect(view.json["notifications"] as? String == "granted")
        }
    }
}
