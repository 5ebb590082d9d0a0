import HeraldDomain
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldRelay

/// The deadline rules as data (docs/receipts.md, "Deadlines that escalate"): no store, no network.
@Suite("Deadline planner")
struct DeadlinePlannerTests {
    static let planner = DeadlinePlanner(callKitReportWindow: .seconds(30))
    static let message = StoreFixtures.push("m", device: "d1", at: 1_000)
    static let call = StoreFixtures.push("c", device: "d1", kind: .call, at: 1_000)

    static func app(_ rules: [DeadlineRule]) -> AppRecord {
        var app = StoreFixtures.app()
        app.deadlines = rules
        return app
    }

    @Test(
        "a push gets its app's rule for its kind, due from its acceptance",
        arguments: [
            (OutboxKind.message, [DeadlineRule(kind: .message, after: 60, action: .ring)], DeadlineAction.ring, 61_000),
            (.call, [DeadlineRule(kind: .message, after: 60, action: .ring)], nil, 0),
            (.call, [DeadlineRule(kind: .call, after: 20, action: .notify)], .notify, 21_000),
            (.missedCall, [DeadlineRule(kind: .message, after: 60, action: .notify)], nil, 0),
            (.message, [], nil, 0),
        ] as [(OutboxKind, [DeadlineRule], DeadlineAction?, Int64)]
    )
    func armedAtAcceptance(kind: OutboxKind, rules: [DeadlineRule], action: DeadlineAction?, due: Int64) {
        let push = StoreFixtures.push("p", device: "d1", kind: kind, at: 1_000)
        let armed = Self.planner.armed(push, app: Self.app(rules))
        #expect(armed.map(\.action) == (action.map { [$0] } ?? []))
        #expect(armed.allSatisfy { $0.dueAt == due && $0.pushID == "p" && $0.deviceID == "d1" })
    }

    @Test("a push written withheld (no notification permission) gets no deadline")
    func withheldGetsNone() {
        var push = Self.message
        push.state = .skipped
        #expect(
            Self.planner.armed(push, app: Self.app([DeadlineRule(kind: .message, after: 1, action: .notify)])).isEmpty
        )
    }

    @Test(
        "only a VoIP push's delivered receipt arms the CallKit guard",
        arguments: [
            (ReceiptStage.delivered, OutboxKind.call, true),
            (.shown, .call, false),
            (.delivered, .message, false),
        ]
    )
    func armedByReceipt(stage: ReceiptStage, kind: OutboxKind, arms: Bool) {
        let push = StoreFixtures.push("p", device: "d1", kind: kind, at: 1_000)
        let armed = Self.planner.armed(by: stage, for: push, at: 5_000)
        #expect(
            armed == (arms ? PushDeadline(pushID: "p", deviceID: "d1", action: .callKitReport, dueAt: 35_000) : nil)
        )
    }

    @Test("shown and tapped cancel; delivered, opened and failed do not")
    func cancellingStages() {
        #expect(ReceiptStage.allCases.filter(DeadlinePlanner.cancels) == [.shown, .tapped])
    }

    static func receipts(_ stages: [ReceiptStage]) -> [PushReceipt] {
        stages.map { PushReceipt(pushID: "p", stage: $0, deviceTime: 1, receivedAt: 2, failure: nil) }
    }

    @Test(
        "what a deadline that passed does",
        arguments: [
            // An escalation acts unless the push was shown (or tapped), or is gone.
            (
                DeadlineAction.otherDevices, "message", [ReceiptStage](), true, nil,
                DeadlinePlanner.Decision.escalate(.otherDevices)
            ),
            (.otherDevices, "message", [.delivered, .opened], true, nil, .escalate(.otherDevices)),
            (.resend, "message", [.failed], true, nil, .escalate(.resend)),
            (.ring, "message", [.shown], true, nil, .settle),
            (.notify, "message", [.tapped], true, nil, .settle),
            (.notify, "gone", [], true, nil, .settle),
            (.notify, "message", [], false, nil, .settle),
            // A call's push only tells the backend, whatever the rule says.
            (.resend, "call", [], true, nil, .escalate(.notify)),
            // The CallKit guard counts a push PushKit delivered and nothing reported.
            (.callKitReport, "call", [.delivered], true, CallDeviceReport.pushed, .unreported),
            (.callKitReport, "call", [.delivered], true, nil, .unreported),
            (.callKitReport, "call", [.delivered], true, .ringing, .settle),
            (.callKitReport, "call", [.delivered], true, .declined, .settle),
            (.callKitReport, "call", [.delivered, .shown], true, .pushed, .settle),
            (.callKitReport, "call", [], true, .pushed, .settle),
        ] as [(DeadlineAction, String, [ReceiptStage], Bool, CallDeviceReport?, DeadlinePlanner.Decision)]
    )
    func decide(
        action: DeadlineAction,
        push: String,
        stages: [ReceiptStage],
        deviceExists: Bool,
        report: CallDeviceReport?,
        decision: DeadlinePlanner.Decision
    ) {
        let entry: OutboxEntry? =
            switch push {
            case "message": Self.message
            case "call": Self.call
            default: nil
            }
        let deadline = PushDeadline(pushID: "p", deviceID: "d1", action: action, dueAt: 9_000)
        let decided = Self.planner.decide(
            deadline,
            push: entry,
            receipts: Self.receipts(stages),
            deviceExists: deviceExists,
            callReport: report
        )
        #expect(decided == decision)
    }

    @Test(
        "an app's rules are refused by the field at fault",
        arguments: [
            ([DeadlineRule(kind: .message, after: 60, action: .otherDevices)], nil),
            ([DeadlineRule(kind: .message, after: 0, action: .notify)], "deadlines[0].after"),
            ([DeadlineRule(kind: .message, after: 86_401, action: .notify)], "deadlines[0].after"),
            (
                [
                    DeadlineRule(kind: .call, after: 5, action: .notify),
                    DeadlineRule(kind: .call, after: 9, action: .notify),
                ],
                "deadlines[1].kind"
            ),
            ([DeadlineRule(kind: .message, after: 5, action: .callKitReport)], "deadlines[0].action"),
            ([DeadlineRule(kind: .missedCall, after: 5, action: .notify)], "deadlines[0].kind"),
            ([DeadlineRule(kind: .call, after: 5, action: .otherDevices)], "deadlines[0].action"),
        ] as [([DeadlineRule], String?)]
    )
    func rulesAreChecked(rules: [DeadlineRule], field: String?) {
        #expect(DeadlinePlanner.problem(with: rules)?.field == field)
    }
}
