import Foundation
import GRDB
import HeraldAPNsCore
import HeraldRelay
import HeraldRelayAPI
import HeraldSandbox
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldStoreSQLite

/// `callback.pushed` tells the contact center that APNs accepted the dialog's push, not that it
/// was queued (issue 32, item 6): through the HTTP/2 sandbox, refused → none; accepted → one.
@Suite("Callback pushed when accepted", .timeLimit(.minutes(2)))
struct CallbackPushedTests {
    /// The callback's pushes in the outbox: state by device.
    static func pushes(_ harness: RelayHarness, callback: String) async throws -> [String: String] {
        try await harness.store.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT device_id, state FROM outbox WHERE kind = 'callback' AND subject_id LIKE ?",
                arguments: [callback + "#%"]
            )
            return Dictionary(uniqueKeysWithValues: rows.map { ($0[0] as String, $0[1] as String) })
        }
    }

    /// The webhook events of `key`, oldest first: type and data.
    static func events(_ harness: RelayHarness, key: String) async throws -> [(type: String, data: String)] {
        try await harness.store.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT type, data FROM webhook_events WHERE ordering_key = ? ORDER BY sequence",
                arguments: [key]
            ).map { (type: $0[0], data: $0[1]) }
        }
    }

    @Test("APNs refuses the dialog on every device (a dead token, a bad topic): no callback.pushed")
    func refusedPushIsNotReported() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            let dead = try await harness.phone(user: "ivy")
            let refused = try await harness.phone(user: "ivy")
            try harness.core.inject(SandboxFault(reason: .unregistered, token: dead.messagingToken))
            try harness.core.inject(SandboxFault(reason: .badTopic, token: refused.messagingToken))
            let scheduled = try await CallbackFlowTests.schedule(harness, user: "ivy")
            let id = scheduled.callbackID
            // Both outcomes recorded: each push finished, its event written with it.
            try await eventually("both pushes finished") {
                try await Self.pushes(harness, callback: id)
                    == [dead.deviceID: "token_dead", refused.deviceID: "failed"]
            }
            #expect(try await Self.events(harness, key: "callback:" + id).isEmpty)
            #expect(try await harness.relay.callbacks.callback(id: id).state == .pushed)
            // The push's own failure events are what the backend hears.
            let failures = try await harness.store.read { db in
                try String.fetchAll(
                    db,
                    sql: """
                        SELECT w.type FROM webhook_events w JOIN outbox o ON w.ordering_key = 'push:' || o.push_id
                        WHERE o.kind = 'callback' ORDER BY w.type
                        """
                )
            }
            #expect(failures == ["push.failed", "push.token_dead"])
        }
    }

    @Test("APNs accepts it on two devices: one callback.pushed, written once APNs answered, not before")
    func acceptedPushIsReportedOnce() async throws {
        try await RelayHarness.with(.recordingEvents) { harness in
            let first = try await harness.phone(user: "jay")
            let second = try await harness.phone(user: "jay")
            // APNs answers a second after it accepted: the push is accepted at the sandbox (its
            // inspection log says so) while the relay still waits for the answer.
            harness.core.setLatency(.seconds(1))
            let scheduled = try await CallbackFlowTests.schedule(harness, user: "jay")
            let id = scheduled.callbackID
            try await eventually("the sandbox to accept both pushes") {
                harness.accepted(token: first.messagingToken).count == 1
                    && harness.accepted(token: second.messagingToken).count == 1
            }
            let inFlight = try await Self.pushes(harness, callback: id)
            #expect(Set(inFlight.values) == ["sending"], "\(inFlight)")
            #expect(try await Self.events(harness, key: "callback:" + id).isEmpty)

            try await eventually("both pushes delivered") {
                try await Self.pushes(harness, callback: id)
                    == [first.deviceID: "delivered", second.deviceID: "delivered"]
            }
            harness.core.setLatency(.zero)
            let events = try await Self.events(harness, key: "callback:" + id)
            #expect(events.map(\.type) == ["callback.pushed"])
            let body = try #require(events.first).data
            let data = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
            #expect(data["callback_id"] as? String == id && data["user_id"] as? String == "jay")
            #expect(data["push"] as? Int == 1 && data["devices"] as? Int == 2 && data["state"] as? String == "pushed")

            // The answer after it: its own event, no second callback.pushed.
            let answer = try await harness.call(
                .POST,
                "/v1/callbacks/\(id)/actions/ready",
                auth: .bearer(first.credential),
                body: nil
            )
            #expect(answer.status == 200, "\(answer.text)")
            let after = try await Self.events(harness, key: "callback:" + id)
            #expect(after.map(\.type) == ["callback.pushed", "callback.action"])
        }
    }
}
