import Foundation
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import NIOCore
import Testing

/// An APNs outage end to end: the relay, its SQLite store and APNs client against the sandbox,
/// which plays an APNs that cannot be reached while a backlog builds up, until the relay has
/// marked APNs down, and then comes back.
@Suite(.timeLimit(.minutes(2)))
struct OutageRecoveryTests {
    @Test("after an APNs outage the backlog is delivered at once, a call first, each push in one attempt")
    func backlogDrainsOnReturn() async throws {
        var setup = RelayHarness.Setup()
        // The relay's own backoff (the test stack's is short): what a push backing off on its
        // own during the outage would wait.
        setup.dispatcher = {
            $0.retryBase = .seconds(1)
            $0.retryMaximum = .seconds(300)
        }
        try await RelayHarness.with(setup) { harness in
            let phones = [try await harness.phone(user: "alice"), try await harness.phone(user: "bob")]
            // Connections are up before the outage.
            let warmUp = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "alice", text: "0")
            )
            try await harness.push(
                try #require(try warmUp.decode(IngestReceipt.self).pushes.first?.pushID),
                reaches: .delivered
            )

            let up = #"herald_relay_network_up{network="apns"}"#
            #expect(harness.metric(up) == 1)
            harness.sandbox.apnsServer.beUnreachable(for: .seconds(60))
            var pushIDs: [String] = []
            for index in 0..<10 {
                for user in ["alice", "bob"] {
                    let reply = try await harness.call(
                        .POST,
                        "/v1/messages",
                        body: RelayFlowTests.message(to: user, text: "m\(index)")
                    )
                    pushIDs += try reply.decode(IngestReceipt.self).pushes.map(\.pushID)
                }
            }
            // The calls come last, during the outage: newer than every message, they go first.
            for user in ["alice", "bob"] {
                let reply = try await harness.call(
                    .POST,
                    "/v1/calls",
                    body: #"{"to":"\#(user)","from":{"id":"agent-7","name":"Dana"},"call_id":"call-\#(user)"}"#
                )
                #expect(reply.status == 202)
                pushIDs += try reply.decode(IngestReceipt.self).pushes.map(\.pushID)
            }
            // The relay found APNs unreachable (its gauge says so); then APNs comes back.
            try await eventually("the relay to mark APNs down") { harness.metric(up) == 0 }
            // And every push tried before it knew is back in the queue: one still out in the APNs
            // client when APNs returns would be answered first, whatever its priority (a loaded CI
            // machine once saw eight messages delivered so before the calls).
            try await eventually("no push in flight") {
                for id in pushIDs where try await harness.relay.ingest.pushStatus(id: id).state == .sending {
                    return false
                }
                return true
            }
            let until = Int64(Date().timeIntervalSince1970 * 1000)
            harness.sandbox.apnsServer.endOutage()
            #expect(pushIDs.count == 22)
            for id in pushIDs {
                try await harness.push(id, reaches: .delivered, timeout: .seconds(20))
            }

            let accepted = phones.flatMap {
                harness.accepted(token: $0.messagingToken) + harness.accepted(token: $0.voipToken)
            }
            .filter { $0.receivedAt >= until }
            .sorted { $0.receivedAt < $1.receivedAt }
            #expect(accepted.count == 22)
            let first = try #require(accepted.first)
            let last = try #require(accepted.last)
            // The one probe out when APNs came back may be a message: a probe takes the first push
            // queued at the moment it is claimed, and under load that was once a message (a CI
            // run). The backlog the woken loops drain after it starts with a call.
            let firstCall = accepted.firstIndex { $0.pushType == "voip" }
            let order = accepted.map { ($0.pushType ?? "?") + "@\($0.receivedAt - until)ms" }
            #expect(firstCall == 0 || firstCall == 1, "a call goes first, or right after the probe: \(order)")
            // Generous for a loaded machine: a push backing off on its own waits seconds.
            #expect(first.receivedAt - until < 1500, "first push \(first.receivedAt - until) ms after APNs came back")
            #expect(last.receivedAt - until < 3000, "last push \(last.receivedAt - until) ms after APNs came back")
            #expect(harness.metric(up) == 1)
            for id in pushIDs {
                let status = try await harness.relay.ingest.pushStatus(id: id)
                #expect(status.attempts == 1, "\(id): the outage cost no attempt (\(status.attempts))")
            }
        }
    }
}
