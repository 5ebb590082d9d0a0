import HeraldCrypto
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldRelay

/// The receipt rules as data (docs/receipts.md): no store, no network, no clock but the one
/// passed in.
@Suite("Receipt planner")
struct ReceiptPlannerTests {
    static let planner = ReceiptPlanner()
    static let device = StoreFixtures.device("d1", user: "ana")
    static let push = StoreFixtures.push("p1", device: "d1", at: 1_000)
    static let keyID = KeyID(bytes: [1, 2, 3, 4, 5, 6, 7, 8])!
    static let tag = ByteEncoding.base64URL([UInt8](repeating: 9, count: 32))
    static var hooked: AppRecord {
        var app = StoreFixtures.app()
        app.webhook = AppWebhook(url: "https://backend.example/hooks", sealedSecret: [1])
        return app
    }

    static func request(
        _ stage: ReceiptStage,
        failure: ReceiptFailure? = nil,
        push: String = "p1",
        keyID: String = keyID.hex,
        tag: String = tag
    ) -> ReceiptRequest {
        ReceiptRequest(pushID: push, stage: stage, deviceTime: 1_500, failure: failure, keyID: keyID, tag: tag)
    }

    static func refusal(_ request: ReceiptRequest) -> String? {
        do {
            _ = try planner.receipt(request)
            return nil
        } catch {
            return error.identifier + (error.field.map { ":" + $0 } ?? "")
        }
    }

    @Test(
        "a request is checked field by field",
        arguments: [
            (request(.shown), nil),
            (request(.failed, failure: .budgetExceeded), nil),
            (request(.failed), "invalid_field:failure"),
            (request(.shown, failure: .tampered), "invalid_field:failure"),
            (request(.shown, push: ""), "invalid_field:push_id"),
            (request(.shown, push: String(repeating: "p", count: 201)), "invalid_field:push_id"),
            (request(.shown, keyID: "xyz"), "invalid_field:key_id"),
            (request(.shown, tag: "not base64url!"), "invalid_field:tag"),
            (request(.shown, tag: ByteEncoding.base64URL([1, 2, 3])), "invalid_field:tag"),
        ] as [(ReceiptRequest, String?)]
    )
    func requestChecks(_ request: ReceiptRequest, _ expected: String?) {
        #expect(Self.refusal(request) == expected)
    }

    struct Case: Sendable, CustomStringConvertible {
        var description: String
        var stage: ReceiptStage
        var failure: ReceiptFailure? = nil
        var push: OutboxEntry? = ReceiptPlannerTests.push
        var app: AppRecord? = ReceiptPlannerTests.hooked
        var verified = true
        /// The refusal, or the webhook event the receipt writes (nil: none).
        var refusal: ReceiptPlanner.Refusal? = nil
        var event: WebhookEventType? = nil
    }

    static let cases: [Case] = {
        var other = push
        other.deviceID = "d2"
        return [
            Case(description: "delivered: recorded, no event", stage: .delivered),
            Case(description: "opened: recorded, no event", stage: .opened),
            Case(description: "shown: push.shown", stage: .shown, event: .pushShown),
            Case(
                description: "failed: push.failed_on_device",
                stage: .failed,
                failure: .tampered,
                event: .pushFailedOnDevice
            ),
            Case(description: "tapped: push.tapped", stage: .tapped, event: .pushTapped),
            Case(description: "an app without a webhook: no event", stage: .shown, app: StoreFixtures.app()),
            Case(description: "no such push", stage: .shown, push: nil, refusal: .unknownPush),
            Case(description: "another device's push", stage: .shown, push: other, refusal: .unknownPush),
            Case(description: "a tag that does not verify", stage: .shown, verified: false, refusal: .badTag),
            Case(
                description: "another device's push with a bad tag: unknown first",
                stage: .shown,
                push: other,
                verified: false,
                refusal: .unknownPush
            ),
        ]
    }()

    @Test("a VoIP push's delivered receipt arms the CallKit guard in the receipt's transaction")
    func deliveredVoIPArmsTheGuard() throws {
        let call = StoreFixtures.push("p1", device: "d1", kind: .call, at: 1_000)
        let (receipt, _) = try Self.planner.receipt(Self.request(.delivered))
        let planned = try Self.planner.record(
            receipt,
            device: Self.device,
            push: call,
            app: Self.hooked,
            verified: true,
            now: 2_000
        ).get()
        let guardDeadline = PushDeadline(pushID: "p1", deviceID: "d1", action: .callKitReport, dueAt: 32_000)
        #expect(planned.change.writes.dropFirst() == [.armDeadlines([guardDeadline])])
    }

    @Test("what a receipt writes, or why it is refused", arguments: cases)
    func plans(_ testCase: Case) throws {
        let (receipt, _) = try Self.planner.receipt(Self.request(testCase.stage, failure: testCase.failure))
        let planned = Self.planner.record(
            receipt,
            device: Self.device,
            push: testCase.push,
            app: testCase.app,
            verified: testCase.verified,
            now: 2_000
        )
        switch planned {
        case .failure(let refusal):
            #expect(refusal == testCase.refusal)
        case .success(let planned):
            #expect(testCase.refusal == nil)
            guard case .recordReceipt(let stored, let events) = try #require(planned.change.writes.first) else {
                Issue.record("not a receipt write: \(planned.change.writes)")
                return
            }
            // Beside the receipt: a shown or tapped receipt cancels the push's deadlines.
            let cancels = testCase.stage == .shown || testCase.stage == .tapped
            #expect(planned.change.writes.dropFirst() == (cancels ? [.cancelDeadlines(pushIDs: ["p1"])] : []))
            #expect(
                stored
                    == PushReceipt(
                        pushID: "p1",
                        stage: testCase.stage,
                        deviceTime: 1_500,
                        receivedAt: 2_000,
                        failure: testCase.failure
                    )
            )
            #expect(events.map(\.type) == (testCase.event.map { [$0] } ?? []))
            #expect(events.allSatisfy { $0.orderingKey == "push:p1" && !$0.data.contains("sealed") })
            let effects = planned.change.effectsWhenApplied
            #expect(effects.contains(.count(.receipts(testCase.stage, app: StoreFixtures.appID, network: .apns), 1)))
            #expect(effects.contains(.wakeWebhooks) == !events.isEmpty)
            #expect(
                effects.contains(.observeShown(app: StoreFixtures.appID, network: .apns, after: 1_000))
                    == (testCase.stage == .shown)
            )
            #expect(planned.answer == stored)
        }
    }
}
