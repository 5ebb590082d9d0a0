import HeraldMacros
public import HeraldStore

/// The relay's default for a message to a user without an activated device (docs/relay.md, "A
/// message to nobody"): what an app that names no policy of its own gets.
@MemberwiseInit
public struct UndeliverableConfiguration: Sendable, Hashable {
    /// Refused with `no_devices`, or held and pushed when a device of the user activates.
    public var policy: Undeliverable = .hold
    /// How long a held message waits for a device (a second to `maximumHoldFor`).
    public var holdFor: Duration = Self.defaultHoldFor

    /// A day: a customer told to install the app usually does within it.
    public static let defaultHoldFor: Duration = .seconds(24 * 60 * 60)
    /// A week: a held message is a promise the relay keeps in its store; past a week the
    /// conversation it belongs to is long over.
    public static let maximumHoldFor: Duration = .seconds(7 * 24 * 60 * 60)
    /// The holds an app or the configuration may name, in whole seconds (as the file and the
    /// API give them).
    public static let holdForSeconds: ClosedRange<Int64> = 1...maximumHoldFor.components.seconds
}

/// The policy that applies to one app: its own, or the relay's default for what it leaves out.
@MemberwiseInit
struct UndeliverablePolicy: Sendable, Hashable {
    var policy: Undeliverable
    var holdFor: Duration

    init(app: AppRecord?, default relay: UndeliverableConfiguration) {
        policy = app?.undeliverable ?? relay.policy
        // An app's own hold is kept in whole seconds.
        holdFor = app?.holdFor.map { .seconds($0) } ?? relay.holdFor
    }
}

/// What becomes of a message for a user without an activated device: decisions only, no I/O.
enum UndeliverableRule {
    enum Decision: Sendable, Hashable {
        /// The user has devices: the ingest as always (pushes, live deliveries, skips).
        case push
        /// Held until then (milliseconds since the epoch), for the user's first device to take.
        case hold(until: Int64)
        /// Refused: nothing written, the idempotency key unused.
        case refuse
    }

    /// A message names no app, so with no device to say which, every app's policy counts
    /// (`policies`: one per registered app, or the relay's default when none is): held if any
    /// app holds, for the longest of their holds, so that any app whose device may activate for
    /// the user can take it; refused when none does.
    static func decide(recipients: Int, policies: [UndeliverablePolicy], now: Int64) -> Decision {
        guard recipients == 0 else { return .push }
        let holds = policies.filter { $0.policy == .hold }.map(\.holdFor)
        guard let longest = holds.max(), longest > .zero else { return .refuse }
        return .hold(until: now + longest.milliseconds)
    }

    /// Whether a device of an app with `policy` takes a message held from `heldAt` until
    /// `heldUntil`, at `now`: only an app that holds, within its own hold and the message's.
    static func takes(_ policy: UndeliverablePolicy, heldAt: Int64, heldUntil: Int64, now: Int64) -> Bool {
        policy.policy == .hold && now < min(heldUntil, heldAt + policy.holdFor.milliseconds)
    }
}

/// What became of a message for a user without a device: the `outcome` label of
/// `herald_relay_undeliverable_messages_total`.
enum UndeliverableOutcome: String, Sendable {
    case refused, held, released, expired
}
