import Foundation
import HeraldRelayAPI
import HeraldSandbox
import HeraldStore
import Testing

/// `expiration: 0`, "now or never" (seed 000, edge case 2; docs/relay.md, "Push options"): the
/// push network gets expiration 0 (APNs `apns-expiration: 0`, FCM `ttl: "0s"`), the relay makes
/// one attempt, and a push that could not be sent then ends `expired`, never delivered late.
@Suite("Now or never", .timeLimit(.minutes(2)))
struct NowOrNeverTests {
    static func message(to user: String, expiration: Int? = 0) -> String {
        PushOptionsTests.message(to: user, options: expiration.map { ["expiration": $0] } ?? [:])
    }

    @Test(
        "APNs gets apns-expiration 0 and FCM ttl 0s, in process and through `herald provider`; the push status says now_or_never",
        arguments: [false, true]
    )
    func onTheWire(remoteProvider: Bool) async throws {
        var setup = RelayHarness.Setup()
        setup.remoteProvider = remoteProvider
        try await RelayHarness.with(setup) { harness in
            let phone = try await harness.phone(user: "ivy")
            let android = try await harness.androidPhone(user: "ivy")
            let reply = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "ivy"))
            #expect(reply.status == 202, "\(reply.text)")
            let receipt = try reply.decode(IngestReceipt.self)
            #expect(receipt.pushes.count == 2)
            for push in receipt.pushes {
                let status = try await harness.push(push.pushID, reaches: .delivered)
                #expect(status.nowOrNever)
                #expect(status.attempts == 1)
            }
            let apns = try #require(harness.accepted(token: phone.messagingToken).first)
            #expect(apns.expiration == "0")
            let fcm = try #require(harness.acceptedFCM(token: android.messagingToken).first)
            #expect(fcm.ttl == "0s")
        }
    }

    @Test("an APNs outage makes a now-or-never push expired after its one attempt, not held and sent later")
    func apnsOutage() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "jay")
            let warmUp = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "jay", expiration: nil))
            try await harness.push(
                try #require(try warmUp.decode(IngestReceipt.self).pushes.first?.pushID),
                reaches: .delivered
            )
            harness.sandbox.apnsServer.beUnreachable(for: .seconds(60))
            let reply = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "jay"))
            let pushID = try #require(try reply.decode(IngestReceipt.self).pushes.first?.pushID)
            let status = try await harness.push(pushID, reaches: .expired)
            #expect(status.attempts == 1)
            #expect(status.reason?.hasPrefix("now or never: not delivered on its one attempt") == true, "\(status)")

            // APNs comes back: a later push goes out, the expired one never does.
            harness.sandbox.apnsServer.endOutage()
            let after = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "jay", expiration: nil))
            try await harness.push(
                try #require(try after.decode(IngestReceipt.self).pushes.first?.pushID),
                reaches: .delivered,
                timeout: .seconds(20)
            )
            #expect(harness.core.inspection(token: phone.messagingToken).allSatisfy { $0.apnsID != pushID })
            #expect(try await harness.relay.ingest.pushStatus(id: pushID).state == .expired)
        }
    }

    @Test("APNs answering 503 gets one attempt, then the push is expired, not retried")
    func apnsRefusal() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "kim")
            try harness.core.inject(
                SandboxFault(status: 503, reason: .serviceUnavailable, count: 10, token: phone.messagingToken)
            )
            let reply = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "kim"))
            let pushID = try #require(try reply.decode(IngestReceipt.self).pushes.first?.pushID)
            let status = try await harness.push(pushID, reaches: .expired)
            #expect(status.reason == "now or never: not delivered on its one attempt: ServiceUnavailable", "\(status)")
            let requests = harness.core.inspection(token: phone.messagingToken).filter { $0.apnsID == pushID }
            #expect(requests.count == 1, "one attempt: \(requests.map(\.status))")
            #expect(requests.first?.expiration == "0")
        }
    }

    @Test("FCM answering UNAVAILABLE gets one attempt, then the push is expired, not retried")
    func fcmRefusal() async throws {
        try await RelayHarness.with { harness in
            let android = try await harness.androidPhone(user: "lou")
            try harness.core.inject(
                fcmFault: SandboxFCMFault(errorCode: .unavailable, count: 10, token: android.messagingToken)
            )
            let reply = try await harness.call(.POST, "/v1/messages", body: Self.message(to: "lou"))
            let pushID = try #require(try reply.decode(IngestReceipt.self).pushes.first?.pushID)
            let status = try await harness.push(pushID, reaches: .expired)
            #expect(status.reason?.hasPrefix("now or never: not delivered on its one attempt") == true, "\(status)")
            #expect(status.attempts == 1)
            let sends = harness.core.fcmInspection(token: android.messagingToken).filter { $0.kind == .send }
            #expect(sends.count == 1, "one attempt: \(sends.map(\.status))")
            #expect(sends.first?.ttl == "0s")
        }
    }
}
