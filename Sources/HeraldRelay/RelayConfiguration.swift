import HeraldMacros
public import HeraldPush
public import HeraldStore

/// How the relay behaves; apps live in the store.
public struct RelayConfiguration: Sendable {
    /// The time-to-live of a heartbeat that names none.
    public var defaultPresenceTTL: Duration = .seconds(60)
    /// The longest time-to-live a heartbeat may ask for (a heartbeat names whole seconds).
    public var maximumPresenceTTL: Duration = .seconds(3600)
    /// How long messages are kept for fetch-by-id, and idempotency keys remembered.
    public var messageRetention: Duration = .seconds(7 * 24 * 60 * 60)
    /// The longest message text accepted, in UTF-8 bytes (texts longer than the payload budget
    /// are cut in the push and fetched by id).
    public var maximumTextBytes: Int = 64 * 1024
    /// The longest id or name accepted in a request, in UTF-8 bytes.
    public var maximumFieldBytes: Int = 256

    /// Chat background semantics (delayed first push, filtered event types).
    public var chat = ChatConfiguration()
    /// The live channels: acknowledgement timeout, and the node id when nodes share the store.
    public var live = LiveConfiguration()
    /// The platforms the provider stage can push to: iOS needs APNs credentials, Android an FCM
    /// service account. A device of another platform is skipped with `platform_not_configured`.
    public var platforms: Set<DevicePlatform> = Set(DevicePlatform.allCases)
    /// The fleet's credentials and environments, which apps and devices name.
    public var fleet = FleetConfiguration()
    /// A message for a user without an activated device: refused or held (the default of apps
    /// that name no policy of their own).
    public var undeliverable = UndeliverableConfiguration()

    /// The apps' message quotas (docs/relay.md, "Keys and quotas").
    public var quotas = QuotaConfiguration()
    /// The relay's own push deadline: the CallKit report of a VoIP push (docs/receipts.md).
    public var deadlines = DeadlineConfiguration()

    public init() {}
}

/// The relay's own push deadlines; an app's escalations are the app's (`AppRecord.deadlines`).
public struct DeadlineConfiguration: Sendable, Hashable {
    /// How long after a VoIP push's `delivered` receipt the phone's CallKit report (its `shown`
    /// receipt, or the call's ringing report) may come before the push counts as unreported.
    public var callKitReportWindow: Duration = .seconds(30)

    public init(callKitReportWindow: Duration = .seconds(30)) {
        self.callKitReportWindow = callKitReportWindow
    }
}

/// Messages a second per app, counted over the messages sent with the app's API keys, and a cap on
/// each app's queued messages.
@MemberwiseInit
public struct QuotaConfiguration: Sendable, Hashable {
    /// The quota of an app not in `apps`; `nil`: none.
    public var defaultQuota: MessageQuota?
    /// Each app's own quota.
    public var apps: [String: MessageQuota] = [:]
    /// The cap on queued messages of an app not in `appCaps`; `nil`: none.
    public var defaultCap: Int?
    /// Each app's own cap on queued messages.
    public var appCaps: [String: Int] = [:]
}

/// The APNs keys and FCM accounts apps may name, and the environment of a device that names none.
public struct FleetConfiguration: Sendable {
    /// The names of the configured APNs keys; nil when the relay does not know them (its remote
    /// provider holds the keys): any name is then taken, and a wrong one fails its pushes.
    public var apnsKeys: Set<String>? = nil
    /// The names of the configured FCM accounts; nil when the relay does not know them.
    public var fcmAccounts: Set<String>? = nil
    /// The APNs environment of an iOS device when neither it nor its app names one: the default
    /// key's configured environment. Nil when the relay does not know it (its remote provider
    /// holds the keys): the device then keeps none, and its pushes go to the environment the
    /// provider's key is configured for, as before devices had one.
    public var defaultAPNsEnvironment: APNsEnvironment? = nil
    /// The application server keys (VAPID public keys, base64url) browsers subscribe with, by
    /// key name: the key named after an app is that app's, `default` every other app's. Empty
    /// when the relay does not know them.
    public var applicationServerKeys: [String: String] = [:]
    /// Whether a browser's subscription may name a loopback or private address: only for the
    /// sandbox's push service, never in production (a subscription is a URL the relay posts to).
    public var allowPrivateWebPushEndpoints = false

    public init() {}
}

/// Chat background semantics (seed 001, Genesys Mobile Services): how pushes follow a chat whose
/// app went to the background.
public struct ChatConfiguration: Sendable {
    /// How long after the first agent event following a disconnect the first push waits (GMS's
    /// `_client_timeout_notification`); zero pushes at once. Later events push at once.
    public var firstPushDelay: Duration = .seconds(30)
    /// Event types that never push (GMS's `_filtering_chat_events`).
    public var filteredTypes: Set<String> = ["Notice.TypingStarted", "Notice.TypingStopped"]
    /// The most transcript lines one push carries (the newest).
    public var maximumLines: Int = 5
    /// How long a chat may go without an event before it ends (24 hours, a contact center's
    /// usual longest-open chat): an ended chat takes no event, and retention purges its
    /// transcript `messageRetention` after its end.
    public var idleEnd: Duration = .seconds(24 * 60 * 60)

    public init() {}
}
