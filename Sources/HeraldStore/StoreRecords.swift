import HeraldMacros
public import HeraldPush

/// An app the relay pushes for.
public struct AppRecord: Sendable, Hashable, Codable {
    /// The bundle id (iOS) or package name (Android); also the APNs topic.
    public var id: String
    /// The Apple team the app belongs to.
    public var teamID: String
    public var contentPolicy: ContentPolicy
    /// The lock-screen title APNs sees, never the message's.
    public var alertTitle: String
    /// The lock-screen body APNs sees, never the message's.
    public var alertBody: String
    /// How long APNs may keep a messaging push for an offline device, in seconds.
    public var messageTTL: Int64
    /// How long a call push may wait before it must not ring any more, in seconds.
    public var callTTL: Int64
    /// Whether a conversation's messaging pushes replace each other while the device is offline
    /// (`apns-collapse-id`, FCM `collapse_key`): the phone then shows the latest only.
    public var collapseByConversation: Bool
    /// Where the app's backend is told of changes (signed events), if anywhere.
    public var webhook: AppWebhook?
    /// The name of the configured APNs key (its team's) that signs the app's pushes; nil: the
    /// default key.
    public var apnsKey: String?
    /// The name of the configured FCM service account (its Firebase project) that sends the app's
    /// Android pushes; nil: the default account.
    public var fcmAccount: String?
    /// The APNs environment of the app's devices that name none at activation; nil: the key's.
    public var apnsEnvironment: APNsEnvironment?
    /// Whose presence suppresses a messaging push: the device's own (default) or any device of
    /// the user's.
    public var presencePolicy: PresencePolicy = .perDevice
    /// The APNs priority of a message push when the request names none: 5 or 10.
    public var messagePriority: Int = 5
    /// How the queue orders the app's message pushes behind the calls: by time in the queue
    /// (default) or by how long the customer has waited for the agent.
    public var queueOrder: QueueOrder = .queueTime
    /// Whether the app's devices take messages held for their user before they activated
    /// (`hold`) and whether such messages are held for the app at all; nil: the relay's default.
    public var undeliverable: Undeliverable?
    /// How long, in seconds, a message for a user without a device is held for the app; nil: the
    /// relay's default.
    public var holdFor: Int64?
    /// What the relay does when a push of the app is not shown in time (docs/receipts.md,
    /// "Deadlines that escalate"): at most one rule per kind.
    public var deadlines: [DeadlineRule] = []

    /// The longest `messageTTL`: 30 days.
    public static let maximumMessageTTL: Int64 = 30 * 24 * 60 * 60

    public init(
        id: String,
        teamID: String,
        contentPolicy: ContentPolicy = .full,
        alertTitle: String = "New message",
        alertBody: String = "You have a new message",
        messageTTL: Int64 = 24 * 60 * 60,
        callTTL: Int64 = 30,
        collapseByConversation: Bool = false,
        webhook: AppWebhook? = nil,
        apnsKey: String? = nil,
        fcmAccount: String? = nil,
        apnsEnvironment: APNsEnvironment? = nil
    ) {
        self.id = id
        self.teamID = teamID
        self.contentPolicy = contentPolicy
        self.alertTitle = alertTitle
        self.alertBody = alertBody
        self.messageTTL = messageTTL
        self.callTTL = callTTL
        self.collapseByConversation = collapseByConversation
        self.webhook = webhook
        self.apnsKey = apnsKey
        self.fcmAccount = fcmAccount
        self.apnsEnvironment = apnsEnvironment
    }

    enum CodingKeys: String, CodingKey {
        case id
        case teamID = "team_id"
        case contentPolicy = "content_policy"
        case alertTitle = "alert_title"
        case alertBody = "alert_body"
        case messageTTL = "message_ttl"
        case callTTL = "call_ttl"
        case collapseByConversation = "collapse_by_conversation"
        case apnsKey = "apns_key"
        case fcmAccount = "fcm_account"
        case apnsEnvironment = "apns_environment"
        case webhook
        case presencePolicy = "presence_policy"
        case messagePriority = "message_priority"
        case queueOrder = "queue_order"
        case undeliverable
        case holdFor = "hold_for"
        case deadlines
    }

    /// The record as the API shows it: the webhook's url and `secret_set`, never its secret.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(teamID, forKey: .teamID)
        try container.encode(contentPolicy, forKey: .contentPolicy)
        try container.encode(alertTitle, forKey: .alertTitle)
        try container.encode(alertBody, forKey: .alertBody)
        try container.encode(messageTTL, forKey: .messageTTL)
        try container.encode(callTTL, forKey: .callTTL)
        try container.encode(collapseByConversation, forKey: .collapseByConversation)
        try container.encode(presencePolicy, forKey: .presencePolicy)
        try container.encode(messagePriority, forKey: .messagePriority)
        try container.encode(queueOrder, forKey: .queueOrder)
        try container.encodeIfPresent(undeliverable, forKey: .undeliverable)
        try container.encodeIfPresent(holdFor, forKey: .holdFor)
        if !deadlines.isEmpty { try container.encode(deadlines, forKey: .deadlines) }
        if let webhook {
            var nested = container.nestedContainer(keyedBy: AppWebhook.ShownKeys.self, forKey: .webhook)
            try nested.encode(webhook.url, forKey: .url)
            try nested.encode(true, forKey: .secretSet)
        }
        try container.encodeIfPresent(apnsKey, forKey: .apnsKey)
        try container.encodeIfPresent(fcmAccount, forKey: .fcmAccount)
        try container.encodeIfPresent(apnsEnvironment, forKey: .apnsEnvironment)
    }

    /// Fields other than `id` and `team_id` may be left out (configuration files do).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = AppRecord(id: "", teamID: "")
        id = try container.decode(String.self, forKey: .id)
        teamID = try container.decode(String.self, forKey: .teamID)
        contentPolicy =
            try container.decodeIfPresent(ContentPolicy.self, forKey: .contentPolicy) ?? defaults.contentPolicy
        alertTitle = try container.decodeIfPresent(String.self, forKey: .alertTitle) ?? defaults.alertTitle
        alertBody = try container.decodeIfPresent(String.self, forKey: .alertBody) ?? defaults.alertBody
        messageTTL = try container.decodeIfPresent(Int64.self, forKey: .messageTTL) ?? defaults.messageTTL
        callTTL = try container.decodeIfPresent(Int64.self, forKey: .callTTL) ?? defaults.callTTL
        collapseByConversation =
            try container.decodeIfPresent(Bool.self, forKey: .collapseByConversation) ?? defaults.collapseByConversation
        apnsKey = try container.decodeIfPresent(String.self, forKey: .apnsKey)
        fcmAccount = try container.decodeIfPresent(String.self, forKey: .fcmAccount)
        apnsEnvironment = try container.decodeIfPresent(APNsEnvironment.self, forKey: .apnsEnvironment)
        presencePolicy =
            try container.decodeIfPresent(PresencePolicy.self, forKey: .presencePolicy) ?? defaults.presencePolicy
        messagePriority = try container.decodeIfPresent(Int.self, forKey: .messagePriority) ?? defaults.messagePriority
        queueOrder = try container.decodeIfPresent(QueueOrder.self, forKey: .queueOrder) ?? defaults.queueOrder
        undeliverable = try container.decodeIfPresent(Undeliverable.self, forKey: .undeliverable)
        holdFor = try container.decodeIfPresent(Int64.self, forKey: .holdFor)
        deadlines = try container.decodeIfPresent([DeadlineRule].self, forKey: .deadlines) ?? []
        guard messagePriority == 5 || messagePriority == 10 else {
            throw DecodingError.dataCorruptedError(
                forKey: .messagePriority,
                in: container,
                debugDescription: "message_priority must be 5 or 10"
            )
        }
    }
}

/// An app's webhook: where its events go, and the secret they are signed with, sealed with the
/// master key (the store never sees it in the clear).
public struct AppWebhook: Sendable, Hashable {
    /// An http or https URL with a host.
    public var url: String
    /// The signing secret, sealed with the master key for this app.
    public var sealedSecret: [UInt8]

    public init(url: String, sealedSecret: [UInt8]) {
        self.url = url
        self.sealedSecret = sealedSecret
    }

    enum ShownKeys: String, CodingKey {
        case url
        case secretSet = "secret_set"
    }
}

/// One activated device: its tokens and the relay's half of its key agreement.
///
/// Secrets are stored sealed by the caller (with the master key); the store never sees them in
/// the clear.
@MemberwiseInit
public struct DeviceRecord: Sendable, Hashable {
    public var id: String
    public var userID: String
    public var appID: String
    public var platform: DevicePlatform
    public var messagingToken: String?
    public var voipToken: String?
    /// The key id of the current agreement, hex.
    public var keyID: String
    /// The key id before the last re-activation, which pushes in flight may still carry.
    public var previousKeyID: String?
    public var devicePublicKey: [UInt8]
    public var relayPublicKey: [UInt8]
    /// The relay's secret key for this device, sealed with the master key.
    public var sealedRelaySecretKey: [UInt8]
    /// The relay's session keys (receive ‖ transmit), sealed with the master key.
    public var sealedSessionKeys: [UInt8]
    /// A hash of the device credential; the credential itself is never stored.
    public var credentialHash: [UInt8]
    /// Why the last token was dropped (APNs' reason), while the device has none.
    public var tokenDeadReason: String?
    public var createdAt: Int64
    public var updatedAt: Int64
    /// The APNs environment its tokens belong to (iOS); nil for Android, and for a device
    /// activated before environments were kept (its pushes use the key's environment).
    public var apnsEnvironment: APNsEnvironment?
    /// Whether the user lets the app show notifications, as the device last reported it
    /// (`granted` until it reports otherwise; a re-activation keeps it).
    public var notificationPermission: NotificationPermission = .granted
    /// When `notificationPermission` took its value (milliseconds since the epoch); `nil` while
    /// the device never reported one.
    public var notificationPermissionAt: Int64?
    /// A browser's Web Push subscription keys (`p256dh`, `auth`), which change with its endpoint
    /// (the messaging token); nil for every other platform.
    public var webPushKeys: WebPushKeys? = nil
}

/// A device's last heartbeat.
@MemberwiseInit
public struct PresenceRecord: Sendable, Hashable {
    public var deviceID: String
    public var userID: String
    /// The conversation on screen, if any.
    public var conversation: String?
    public var state: PresenceState
    public var updatedAt: Int64
    /// After this (milliseconds since the epoch) an `active` record counts as background.
    public var expiresAt: Int64

    /// Whether the user is looking at `conversation` at `now`: active, fresh, and in it.
    public func isActive(in conversation: String, at now: Int64) -> Bool {
        state == .active && now < expiresAt && self.conversation == conversation
    }
}

/// A message kept for fetch-by-id.
///
/// Its sender and its text are sealed by the caller with the master key; the store never sees
/// them in the clear (only the ids and times it must look up and expire by).
@MemberwiseInit
public struct MessageRecord: Sendable, Hashable {
    public var id: String
    public var userID: String
    public var conversation: String
    /// The sender (its id and name), sealed with the master key.
    public var sealedSender: [UInt8]
    /// The text, sealed with the master key.
    public var sealedText: [UInt8]
    public var createdAt: Int64
    /// After this (milliseconds since the epoch) the message is deleted.
    public var expiresAt: Int64
    /// The request's push options (priority, expiration, badge, category, public data, title and
    /// data), sealed with the master key: what a push made later (a live delivery not
    /// acknowledged) carries. `nil` when the message went to no live channel or named none.
    public var sealedPushOptions: [UInt8]?
}

/// The sender of a message, or the author of a chat event, that a version before senders were
/// sealed at rest stored in the clear: what the relay, which holds the master key, seals once at
/// start (`SealingStore`).
@MemberwiseInit
public struct ClearSender: Sendable, Hashable {
    /// Which record the sender belongs to.
    public enum Record: Sendable, Hashable {
        case message(id: String)
        case transcriptEvent(conversation: String, position: Int)
    }

    public var record: Record
    public var senderID: String
    public var senderName: String
    /// The record's time (milliseconds since the epoch: a message's creation, an event's time),
    /// which the sealing binds to.
    public var at: Int64
}

/// A device of a message's recipient, with its last heartbeat if it sent one and the live
/// channel a relay node published for it, if any.
@MemberwiseInit
public struct Recipient: Sendable, Hashable {
    public var device: DeviceRecord
    public var presence: PresenceRecord?
    /// The device's published live channel (`LiveSessionStore`), read with the device so an
    /// ingest makes one read, not two; its lease may have run out (`expiresAt`): the reader
    /// decides at its own time.
    public var liveSession: LiveSessionRecord?
}

/// One event of a chat's transcript (seed 001: GMS transcripts with positions).
@MemberwiseInit
public struct TranscriptEvent: Sendable, Hashable {
    public var conversation: String
    /// 1, 2, 3 … within the conversation; given by the store.
    public var position: Int = 0
    /// The customer the chat is with.
    public var userID: String
    /// `Message.Text`, `Notice.TypingStarted`, `Notice.Joined`, …
    public var type: String
    /// The author (id and name), sealed with the master key.
    public var sealedAuthor: [UInt8]
    /// Written by the agent's side (only those can push).
    public var fromAgent: Bool
    /// The text, sealed with the master key (empty text for notices without one).
    public var sealedText: [UInt8]
    /// Milliseconds since the epoch.
    public var at: Int64
}

/// A device whose app went to the background in a chat, with the last position it had seen.
@MemberwiseInit
public struct ChatDisconnect: Sendable, Hashable {
    public var deviceID: String
    public var conversation: String
    public var position: Int
    /// Milliseconds since the epoch.
    public var at: Int64
    /// The first push since the disconnect was sent: later agent events push at once.
    public var pushed: Bool = false
}

/// A chat's life: open from its first transcript event until it ends (the backend ends it, or it
/// stays idle too long); after that no event is added, and retention removes it with its
/// transcript and disconnects.
@MemberwiseInit
public struct ChatRecord: Sendable, Hashable {
    public var conversation: String
    /// The customer the chat is with (its first event's).
    public var userID: String
    /// Milliseconds since the epoch: the first event.
    public var startedAt: Int64
    /// Milliseconds since the epoch: the last event.
    public var lastEventAt: Int64
    /// Milliseconds since the epoch; `nil` while the chat is open.
    public var endedAt: Int64?
}
