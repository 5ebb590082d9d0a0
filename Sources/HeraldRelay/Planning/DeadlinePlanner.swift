import HeraldPush
import HeraldStore

/// The rules of push deadlines (docs/receipts.md, "Deadlines that escalate"), as data: which
/// deadlines a push gets when accepted and when its phone's receipt comes, which receipts cancel
/// them, and what a deadline that passed does. Pure: `RelayDeadlines` reads around it and
/// commits.
struct DeadlinePlanner: Sendable {
    /// How long after a VoIP push's `delivered` receipt its CallKit report may come.
    var callKitReportWindow: Duration

    /// The deadline an accepted push gets from its app's rules: the rule for its kind (message
    /// pushes, transcript pushes among them; call pushes), due `after` seconds from its
    /// acceptance. A push written finished (withheld) gets none.
    func armed(_ push: OutboxEntry, app: AppRecord) -> [PushDeadline] {
        guard push.state == .queued, let rule = app.deadlines.first(where: { $0.kind == push.kind }) else { return [] }
        return [
            PushDeadline(
                pushID: push.pushID,
                deviceID: push.deviceID,
                action: rule.action,
                dueAt: push.createdAt + rule.after * 1000
            )
        ]
    }

    /// The deadline a receipt arms: a VoIP push's `delivered` (PushKit ran the app) gives the app
    /// `callKitReportWindow` to report the call to CallKit.
    func armed(by stage: ReceiptStage, for push: OutboxEntry, at now: Int64) -> PushDeadline? {
        guard stage == .delivered, push.kind == .call, push.usesVoIPToken else { return nil }
        return PushDeadline(
            pushID: push.pushID,
            deviceID: push.deviceID,
            action: .callKitReport,
            dueAt: now + callKitReportWindow.milliseconds
        )
    }

    /// Whether a receipt of `stage` cancels its push's deadlines: the user saw it (for a VoIP
    /// push, `shown` is the CallKit report).
    static func cancels(_ stage: ReceiptStage) -> Bool {
        stage == .shown || stage == .tapped
    }

    /// What a deadline that passed does.
    enum Decision: Sendable, Equatable {
        /// Nothing but settling it: its push or device is gone, it was shown, or its call is over.
        case settle
        /// Act with the escalation (every escalation tells the backend too).
        case escalate(DeadlineAction)
        /// The VoIP push reached the app, which did not report it to CallKit: count it.
        case unreported
    }

    /// What `deadline` does, given its push (nil: gone), its receipts, whether its device is still
    /// there, and for a call push the call's report from that device (nil: no call, or not one of
    /// its devices).
    func decide(
        _ deadline: PushDeadline,
        push: OutboxEntry?,
        receipts: [PushReceipt],
        deviceExists: Bool,
        callReport: CallDeviceReport?
    ) -> Decision {
        guard let push, deviceExists else { return .settle }
        let stages = Set(receipts.map(\.stage))
        if stages.contains(where: Self.cancels) { return .settle }
        switch deadline.action {
        case .callKitReport:
            // Ringing, answered or declined: the app reported the call (its receipt may be lost).
            if let callReport, callReport != .pushed { return .settle }
            return stages.contains(.delivered) ? .unreported : .settle
        case .otherDevices, .resend, .ring:
            // Only a message's push escalates so; a call's rule can only tell the backend.
            return push.kind == .message ? .escalate(deadline.action) : .escalate(.notify)
        case .notify:
            return .escalate(.notify)
        }
    }

    /// Why an app's rules are refused, naming the field; `nil` when they are fine.
    static func problem(with rules: [DeadlineRule]) -> (field: String, reason: String)? {
        for (index, rule) in rules.enumerated() {
            let field = "deadlines[\(index)]"
            if !DeadlineRule.kinds.contains(rule.kind) {
                return (field + ".kind", "must be message or call")
            }
            if rules[..<index].contains(where: { $0.kind == rule.kind }) {
                return (field + ".kind", "has a rule already: one rule per kind")
            }
            if !DeadlineRule.afterSeconds.contains(rule.after) {
                return (field + ".after", "must be between 1 and \(DeadlineRule.afterSeconds.upperBound) seconds")
            }
            if !DeadlineAction.escalations.contains(rule.action) {
                return (field + ".action", "must be one of notify, other_devices, resend, ring")
            }
            if rule.kind == .call, rule.action != .notify {
                return (field + ".action", "must be notify for calls: a call already rings every device")
            }
        }
        return nil
    }
}
