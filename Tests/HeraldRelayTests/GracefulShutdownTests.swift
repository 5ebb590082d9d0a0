import Foundation
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldStorePostgres

/// A node stopped as SIGTERM stops `herald serve` (`RelayRuntime.startOrder`, the store last),
/// with pushes in flight, beside another node on the same database.
@Suite("Graceful shutdown", .timeLimit(.minutes(2)))
struct GracefulShutdownTests {
    @Test(
        "a node stopped with pushes in flight sends and records its batches before its store closes: every push reaches APNs once"
    )
    func stopsWithPushesInFlight() async throws {
        try await TwoNodeCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            // APNs answers late, so the node's batches are still out when it is told to stop.
            cluster.stack.core.setLatency(.milliseconds(300))
            let phone = try await cluster.phone(user: "u1", on: a)
            var pushes: Set<String> = []
            for index in 0..<20 {
                let receipt = try await cluster.sendMessage(to: "u1", text: "message \(index)", via: a)
                pushes.formUnion(receipt.pushes.map(\.pushID))
            }
            #expect(pushes.count == 20)
            try await eventually("pushes in flight on node a") { a.dispatcher.pushesInFlight > 0 }

            await cluster.stop(a)
            // The store stops last: once it answers "closed", every service before it returned.
            try await eventually("node a stopped, its store last", timeout: .seconds(30)) {
                do {
                    _ = try await a.store.apps()
                    return false
                } catch {
                    return "\(error)".contains("the store is closed")
                }
            }
            let drained = try #require(a.dispatcher.drained)
            #expect(drained.pushes > 0, "the stop began with pushes out")
            #expect(a.dispatcher.pushesInFlight == 0)
            // Node a recorded what it sent and put back what it held (the test clock stands still,
            // so a claim it had left would never expire): node b sends the rest, each push once.
            try await eventually("every push delivered", timeout: .seconds(60)) {
                try await b.store.outboxCounts().byState == [.delivered: 20]
            }
            let accepted = cluster.accepted(token: phone.sandboxDevice.messagingToken)
            #expect(accepted.count == 20, "each push reached APNs once")
        }
    }
}
