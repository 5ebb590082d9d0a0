import HeraldRelayAPI
import HeraldTestSupport
import Prometheus
import Testing

/// The recipients a PostgreSQL node keeps between a user's messages (`recipientsForIngest`) with
/// two relay nodes on one database: whatever changes on the other node, a message goes to the
/// devices the user has when it is written.
@Suite("Recipients kept across relay nodes", .timeLimit(.minutes(2)))
struct RecipientsClusterTests {
    @Test(
        "a node that kept a user's recipients sends to the phone the other node activated since, and not to the one it deactivated"
    )
    func keptRecipientsFollowTheOtherNode() async throws {
        try await TestMetrics.isolated { metrics in try await check(metrics) }
    }

    private func check(_ metrics: PrometheusCollectorRegistry) async throws {
        try await TwoNodeCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let first = try await cluster.phone(user: "u1", on: a)
            // Node A reads u1's recipients, and keeps them.
            let one = try await cluster.sendMessage(to: "u1", text: "one", via: a)
            #expect(one.pushes.map(\.deviceID) == [first.deviceID])

            let second = try await cluster.phone(user: "u1", on: b)
            let two = try await cluster.sendMessage(to: "u1", text: "two", via: a)
            #expect(Set(two.pushes.map(\.deviceID)) == [first.deviceID, second.deviceID])

            // The first phone leaves through node B.
            let removed = try await cluster.delete(first, via: b)
            #expect(removed == 204)
            let three = try await cluster.sendMessage(to: "u1", text: "three", via: a)
            #expect(three.pushes.map(\.deviceID) == [second.deviceID])

            try await eventually("each phone got what was sent while it was there") {
                cluster.accepted(token: first.sandboxDevice.messagingToken).count == 2
                    && cluster.accepted(token: second.sandboxDevice.messagingToken).count == 2
            }
            // "two" and "three" were each made twice: for what A kept, then afresh.
            #expect(TestMetrics.value("herald_relay_stale_ingests_total", in: metrics.emitToString()) == 2)
        }
    }
}
