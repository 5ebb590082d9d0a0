import HeraldMacros

// The vocabulary of push deadlines (docs/receipts.md, "Deadlines that escalate").

/// What the relay does when a push's deadline passes without the phone's `shown` (or `tapped`)
/// receipt (docs/receipts.md, "Deadlines that escalate").
public enum DeadlineAction: String, Sendable, Hashable, Codable, CaseIterable {
    /// Only tell the backend: a `push.unseen` webhook event.
    case notify
    /// Push the message to the user's devices it did not go to (and tell the backend).
    case otherDevices = "other_devices"
    /// Send the message again to the same device with priority 10 (and tell the backend).
    case resend
    /// Ring the user as a call from the message's sender (and tell the backend).
    case ring
    /// The relay's own guard on VoIP pushes (never an app's rule): a VoIP push the phone did not
    /// report to CallKit is counted against its device and app (Apple stops VoIP pushes to apps
    /// that keep failing to report them).
    case callKitReport = "callkit_report"

    /// The actions an app's rule may name.
    public static let escalations: [DeadlineAction] = [.notify, .otherDevices, .resend, .ring]
}

/// An app's rule: a push of `kind` not shown within `after` seconds of its acceptance gets
/// `action`, once.
@MemberwiseInit
public struct DeadlineRule: Sendable, Hashable, Codable {
    /// The pushes the rule watches: `message` (a chat's transcript pushes among them) or `call`
    /// (`DeadlineRule.kinds`).
    public var kind: OutboxKind
    /// Seconds from the push's acceptance.
    public var after: Int64
    public var action: DeadlineAction

    /// The longest deadline: a day (a push is rarely worth escalating later).
    public static let afterSeconds: ClosedRange<Int64> = 1...86_400
    /// The kinds of push a rule may watch: a missed call's alert and a callback's dialog have
    /// deadlines of their own (the call's, the callback's).
    public static let kinds: Set<OutboxKind> = [.message, .call]
}

/// How often a device's VoIP pushes went without a CallKit report (`DeadlineAction.callKitReport`).
@MemberwiseInit
public struct UnreportedCalls: Sendable, Hashable, Codable {
    public var count: Int
    /// The last one's deadline, milliseconds since the epoch.
    public var lastAt: Int64

    enum CodingKeys: String, CodingKey {
        case count
        case lastAt = "last_at"
    }
}
