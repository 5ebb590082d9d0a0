import Foundation
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldStorePostgres

/// A call's life with two relay nodes on one PostgreSQL: a device's live channel on the other
/// node still gets its stop within a second, and the missed-call timer fires once when the node
/// that accepted the call is gone.
@Suite("Calls across relay nodes", .timeLimit(.minutes(2)))
struct CallClusterTests {
    struct CallBody: Encodable {
        var to: String
        var from = Party(id: "agent-7", name: "Dana")
        var callID: String
        var ttl: Int64?

        enum CodingKeys: String, CodingKey {
            case to, from
            case callID = "call_id"
            case ttl
        }
    }

    static func channel(
        _ phone: TwoNodeCluster.Phone,
        on node: TwoNodeCluster.Node,
        seenBy other: TwoNodeCluster.Node,
        _ cluster: TwoNodeCluster
    ) async throws -> LiveClient {
        let client = LiveClient(
            baseURL: node.baseURL,
            deviceID: phone.deviceID,
            credential: phone.activation.deviceCredential
        )
        try await eventually("the channel seen from \(other.id)") {
            try await other.store.liveSessions(deviceIDs: [phone.deviceID], now: cluster.clock.now()).map(\.nodeID)
                == [node.id]
        }
        return client
    }

    @Test("answered on node A: the device whose channel node B holds gets call.stop within a second")
    func stopReachesTheOtherNode() async throws {
        try await TwoNodeCluster.with(appWebhook: RelayHarness.unansweredWebhook) { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let phone = try await cluster.phone(user: "u1", on: a)
            let pad = try await cluster.phone(user: "u1", on: b)
            let rung = try await cluster.post("/v1/calls", body: CallBody(to: "u1", callID: "c-x"), to: a)
            try #require(rung.status == 202)
            let phoneChannel = try await Self.channel(phone, on: a, seenBy: b, cluster)
            let padChannel = try await Self.channel(pad, on: b, seenBy: a, cluster)
            defer {
                phoneChannel.close()
                padChannel.close()
            }
            let phoneFrames = CallFlowTests.Frames(phoneChannel)
            let padFrames = CallFlowTests.Frames(padChannel)

            let answeredAt = ContinuousClock.now
            phoneChannel.send(LiveClientFrame.callAnswer(callID: "c-x").jsonText())
            #expect(
                try await padFrames.next(within: .seconds(1))
                    == .callStop(callID: "c-x", reason: .answeredElsewhere, state: .answered)
            )
            #expect(ContinuousClock.now - answeredAt < .seconds(1))
            #expect(
                try await phoneFrames.next()
                    == .callState(callID: "c-x", state: .answered, deviceID: phone.deviceID, accepted: true)
            )
            #expect(try await b.relay.calls.call(id: "c-x").answeredBy == phone.deviceID)
            let left = try await a.store.rows("count stops", "SELECT count(*)::BIGINT FROM call_stops")
            #expect(try #require(left.first).decode(Int64.self) == 0)
        }
    }

    @Test("the node that accepted the call is gone: another node ends it missed, once, with one alert")
    func missedOnceWithoutTheAcceptingNode() async throws {
        try await TwoNodeCluster.with(appWebhook: RelayHarness.unansweredWebhook) { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let phone = try await cluster.phone(user: "u2", on: b)
            let rung = try await cluster.post("/v1/calls", body: CallBody(to: "u2", callID: "c-m", ttl: 20), to: a)
            try #require(rung.status == 202)
            await cluster.stop(a)

            cluster.clock.advance(by: .seconds(21))
            let token = phone.sandboxDevice.messagingToken
            try await eventually("the missed-call alert") { cluster.accepted(token: token).count == 1 }
            #expect(try await b.relay.calls.call(id: "c-m").state == .missed)
            // Past any claim's lease, and every node's timer run again: still one.
            cluster.clock.advance(by: .seconds(120))
            #expect(await b.relay.calls.expireDue() == 0)
            let events = try await b.store.rows(
                "count missed events",
                "SELECT count(*)::BIGINT FROM webhook_events WHERE ordering_key = 'call:c-m' AND type = 'call.missed'"
            )
            #expect(try #require(events.first).decode(Int64.self) == 1)
            // One alert in the outbox (written with the end, so once), and one at the sandbox.
            let alerts = try await b.store.rows(
                "count missed-call alerts",
                "SELECT count(*)::BIGINT FROM outbox WHERE kind = 'missed_call' AND subject_id = 'c-m'"
            )
            #expect(try #require(alerts.first).decode(Int64.self) == 1)
            #expect(cluster.accepted(token: token).count == 1)
        }
    }
}
