import Foundation
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldStorePostgres

/// Callbacks with two relay nodes on one PostgreSQL, both schedulers running on one test clock:
/// each due callback is pushed once, and of two answers at once on two nodes one wins.
@Suite("Callbacks across relay nodes", .timeLimit(.minutes(2)))
struct CallbackClusterTests {
    @Test("twelve callbacks due at once, two schedulers racing: each pushed once, one alert each")
    func pushedOnceAcrossNodes() async throws {
        try await TwoNodeCluster.with(appWebhook: RelayHarness.unansweredWebhook) { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let phone = try await cluster.phone(user: "u1", on: a)
            let due = RequestTime.milliseconds(cluster.clock.now() + 60_000)
            var ids: [String] = []
            for index in 0..<12 {
                let node = index.isMultiple(of: 2) ? a : b
                ids.append(
                    try await node.relay.callbacks.schedule(
                        CallbackRequest(userID: "u1", serviceID: "svc-\(index)", at: due)
                    ).callbackID
                )
            }
            #expect(try await a.relay.callbacks.pushDue(owner: "node-a") == 0)
            // Both nodes' schedulers wake on the same advance and race for the claims.
            cluster.clock.advance(by: .seconds(60))
            try await eventually("every callback pushed") {
                var pushed = 0
                for id in ids where try await b.relay.callbacks.callback(id: id).state == .pushed { pushed += 1 }
                return pushed == ids.count
            }
            for node in cluster.nodes {
                #expect(try await node.relay.callbacks.pushDue(owner: node.id) == 0)
            }
            for id in ids {
                let view = try await a.relay.callbacks.callback(id: id)
                #expect(view.pushes == 1 && view.history.filter { $0.event == "pushed" }.count == 1)
            }
            try await eventually("the alerts at the sandbox") {
                cluster.accepted(token: phone.sandboxDevice.messagingToken).count >= ids.count
            }
            #expect(cluster.accepted(token: phone.sandboxDevice.messagingToken).count == ids.count)
            // Each reported once, when the node that sent it recorded APNs' answer.
            for id in ids {
                try await eventually("callback.pushed of \(id)") {
                    try await a.store.callbackWebhookEvents(callbackID: id).map(\.event.type) == [.callbackPushed]
                }
            }
        }
    }

    @Test("two answers at once on two nodes: one wins, the other is a conflict")
    func answersRaceAcrossNodes() async throws {
        try await TwoNodeCluster.with(appWebhook: RelayHarness.unansweredWebhook) { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let phone = try await cluster.phone(user: "u2", on: a)
            let id = try await a.relay.callbacks.schedule(CallbackRequest(userID: "u2", serviceID: "svc")).callbackID
            try await eventually("the push") { try await b.relay.callbacks.callback(id: id).state == .pushed }
            let device = try #require(try await a.store.device(id: phone.deviceID))
            async let ready = Self.outcome(a.relay, id, "ready", device)
            async let cancel = Self.outcome(b.relay, id, "cancel", device)
            let outcomes = await [ready, cancel]
            #expect(outcomes.compactMap { $0 }.count == 1)
            let final = try await a.relay.callbacks.callback(id: id)
            #expect([.connected, .cancelled].contains(final.state))
            #expect(final.history.filter { $0.event == "action" }.count == 1)
            #expect(
                try await a.store.callbackWebhookEvents(callbackID: id).filter { $0.event.type == .callbackAction }
                    .count == 1
            )
        }
    }

    /// The answer, or nil for a 409.
    static func outcome(
        _ relay: Relay,
        _ id: String,
        _ action: String,
        _ device: DeviceRecord
    ) async
        -> CallbackState?
    {
        do {
            return try await relay.callbacks.answer(id: id, action: action, device: device).state
        } catch {
            #expect(error == .conflict, "\(error)")
            return nil
        }
    }
}
