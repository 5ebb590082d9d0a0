public import HeraldDomain
import HeraldMacros
import HeraldPush

/// Who sent a message or places a call.
@MemberwiseInit
public struct Party: Sendable, Codable, Hashable {
    public var id: String
    public var name: String

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, name
    }
}

/// `POST /v1/messages`.
public struct MessageRequest: Sendable, Codable, Hashable {
    /// The recipient user.
    public var to: String
    public var from: Party
    public var conversation: String
    public var text: String
    /// The same key never makes a second push; the first answer is returned again.
    public var idempotencyKey: String?
    /// The push options: fields of the body itself (`priority`, `badge` …), not an object.
    public var options: MessagePushFields
    /// When the customer began waiting for this reply (milliseconds since the epoch): for an app
    /// whose queue order is `customer_wait`, the push is queued by it (docs/relay.md, "Queue
    /// order").
    public var waitingSince: Int64?

    public init(
        to: String,
        from: Party,
        conversation: String,
        text: String,
        idempotencyKey: String? = nil,
        options: MessagePushFields = .init(),
        waitingSince: Int64? = nil
    ) {
        self.waitingSince = waitingSince
        self.options = options
        self.to = to
        self.from = from
        self.conversation = conversation
        self.text = text
        self.idempotencyKey = idempotencyKey
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        to = try container.decode(String.self, forKey: .to)
        // In the order the fields are declared: a body wrong in several is refused for the
        // first of them.
        (from, conversation, text, idempotencyKey, options) = try MessagePushFields.message(from: decoder)
        waitingSince = try container.decodeIfPresent(Int64.self, forKey: .waitingSince)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(to, forKey: .to)
        try container.encodeIfPresent(waitingSince, forKey: .waitingSince)
        try options.encode(message: (from, conversation, text, idempotencyKey), to: encoder)
    }

    /// The fields besides the ones a broadcast shares (`MessagePushFields.MessageKeys`).
    enum CodingKeys: String, CodingKey, CaseIterable {
        case to
        case waitingSince = "waiting_since"
    }
}

/// `POST /v1/calls`.
public struct CallRequest: Sendable, Codable, Hashable {
    /// The called user.
    public var to: String
    public var from: Party
    /// The backend's call id; a second request with the same id rings nobody again.
    public var callID: String
    /// `audio` (default) or `video`.
    public var media: String?
    /// Seconds the call rings before it is missed; the app's `call_ttl` when absent.
    public var ttl: Int64?

    public init(to: String, from: Party, callID: String, media: String? = nil, ttl: Int64? = nil) {
        self.to = to
        self.from = from
        self.callID = callID
        self.media = media
        self.ttl = ttl
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case to, from
        case callID = "call_id"
        case media, ttl
    }
}

/// What an ingest made: one push per reachable device, and why others got none.
@MemberwiseInit
public struct IngestReceipt: Sendable, Codable, Hashable {
    @MemberwiseInit
    public struct Push: Sendable, Codable, Hashable {
        public var pushID: String
        public var deviceID: String

        enum CodingKeys: String, CodingKey {
            case pushID = "push_id"
            case deviceID = "device_id"
        }
    }

    @MemberwiseInit
    public struct Skipped: Sendable, Codable, Hashable {
        public var deviceID: String
        /// `active_in_conversation`, `no_token`, `token_dead: <reason>`, `platform_not_supported`.
        public var reason: String

        enum CodingKeys: String, CodingKey {
            case deviceID = "device_id"
            case reason
        }
    }

    /// What became of a message.
    public enum Status: String, Sendable, Codable, Hashable {
        /// Made for the user's devices: pushed, delivered live, or skipped per device (`skipped`).
        case accepted
        /// The user has no activated device: held until `held_until`, pushed to the first of the
        /// user's devices that activates before then.
        case held
        /// The user has no activated device and the policy refuses (a broadcast's member only; a
        /// single message is answered 409 `no_devices`): nothing was stored, `id` is empty.
        case refused
    }

    /// The message id (messages) or the call id (calls).
    public var id: String
    public var pushes: [Push]
    public var skipped: [Skipped]
    /// This answer repeats an earlier request's (same idempotency key or call id).
    public var duplicate: Bool = false
    /// What became of the message (an earlier version's stored receipts, without it, were
    /// `accepted`).
    public var status: Status = .accepted
    /// Until when a held message waits for a device, in milliseconds since the epoch.
    public var heldUntil: Int64?
    /// The user the message is for: in a contact-center adapter's answer, the user its customer
    /// was mapped to.
    public var user: String?

    enum CodingKeys: String, CodingKey {
        case id, pushes, skipped, duplicate, status, user
        case heldUntil = "held_until"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        pushes = try container.decode([Push].self, forKey: .pushes)
        skipped = try container.decode([Skipped].self, forKey: .skipped)
        duplicate = try container.decodeIfPresent(Bool.self, forKey: .duplicate) ?? false
        status = try container.decodeIfPresent(Status.self, forKey: .status) ?? .accepted
        heldUntil = try container.decodeIfPresent(Int64.self, forKey: .heldUntil)
        user = try container.decodeIfPresent(String.self, forKey: .user)
    }

    /// The JSON form (keys sorted), written directly: every ingest answers one, and stores one
    /// for its idempotency key.
    public var jsonText: String {
        var json = "{\"duplicate\":" + (duplicate ? "true" : "false")
        if let heldUntil { json += ",\"held_until\":" + String(heldUntil) }
        json += ",\"id\":" + JSONText.quoted(id)
        json += ",\"pushes\":["
        for (index, push) in pushes.enumerated() {
            if index > 0 { json += "," }
            json +=
                "{\"device_id\":" + JSONText.quoted(push.deviceID) + ",\"push_id\":"
                + JSONText.quoted(push.pushID) + "}"
        }
        json += "],\"skipped\":["
        for (index, skip) in skipped.enumerated() {
            if index > 0 { json += "," }
            json +=
                "{\"device_id\":" + JSONText.quoted(skip.deviceID) + ",\"reason\":"
                + JSONText.quoted(skip.reason) + "}"
        }
        json += "],\"status\":" + JSONText.quoted(status.rawValue)
        if let user { json += ",\"user\":" + JSONText.quoted(user) }
        json += "}"
        return json
    }
}

/// `GET /v1/messages/{id}` for the recipient's devices.
@MemberwiseInit
public struct MessageView: Sendable, Codable, Hashable {
    public var messageID: String
    public var conversation: String
    public var from: Party
    public var text: String
    /// Milliseconds since the epoch.
    public var sentAt: Int64

    enum CodingKeys: String, CodingKey {
        case messageID = "message_id"
        case conversation, from, text
        case sentAt = "sent_at"
    }
}

/// `GET /v1/pushes/{id}`.
public struct PushStatusView: Sendable, Codable, Hashable {
    @MemberwiseInit
    public struct Event: Sendable, Codable, Hashable {
        public var at: Int64
        public var state: PushState
        public var reason: String?
    }

    public var pushID: String
    public var deviceID: String
    public var kind: OutboxKind
    public var state: PushState
    public var reason: String?
    public var attempts: Int
    public var apnsID: String
    public var priority: Int
    public var createdAt: Int64
    public var updatedAt: Int64
    public var expiresAt: Int64
    public var history: [Event]
    /// What the state means for the device and what to do, in words, when that is not plain
    /// from the state alone (a dead token); nil otherwise.
    public var explanation: String?
    /// The customer's wait the queue orders the push by (an app whose queue order is
    /// `customer_wait`); nil: its time in the queue.
    public var waitingSince: Int64?
    /// "Now or never": one attempt, expiration 0 on the wire; `expires_at` is the relay's window.
    public var nowOrNever: Bool
    /// The furthest stage the phone's receipts reached (docs/receipts.md); nil: none came.
    public var deviceStage: ReceiptStage?
    /// The phone's receipts, in the order of their stages.
    public var receipts: [PushReceipt]

    /// A push's status; its explanation follows from its state and reason.
    public init(
        pushID: String,
        deviceID: String,
        kind: OutboxKind,
        state: PushState,
        reason: String?,
        attempts: Int,
        apnsID: String,
        priority: Int,
        createdAt: Int64,
        updatedAt: Int64,
        expiresAt: Int64,
        history: [Event],
        waitingSince: Int64? = nil,
        nowOrNever: Bool = false,
        receipts: [PushReceipt] = []
    ) {
        self.pushID = pushID
        self.deviceID = deviceID
        self.kind = kind
        self.state = state
        self.reason = reason
        self.attempts = attempts
        self.apnsID = apnsID
        self.priority = priority
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.expiresAt = expiresAt
        self.history = history
        explanation = Self.explanation(of: state, reason: reason)
        self.waitingSince = waitingSince
        self.nowOrNever = nowOrNever
        self.receipts = receipts
        deviceStage = receipts.map(\.stage).max()
    }

    static func explanation(of state: PushState, reason: String? = nil) -> String? {
        switch state {
        case .tokenDead:
            "the push network no longer accepts this device's token (see reason), so the relay "
                + "removed it; the device gets no pushes until its app activates again with a new token "
                + "(POST /v1/activations)"
        case .failed where reason?.hasPrefix("BadDeviceToken") == true:
            "APNs does not know this token in the environment it was sent to (see reason): most often "
                + "a development build's token sent to production or the reverse; the relay kept the token. "
                + "If the device's apns_environment is wrong, its app activates again naming the right one"
        default:
            nil
        }
    }

    enum CodingKeys: String, CodingKey {
        case pushID = "push_id"
        case deviceID = "device_id"
        case kind, state, reason, attempts
        case apnsID = "apns_id"
        case priority
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case expiresAt = "expires_at"
        case history, explanation
        case waitingSince = "waiting_since"
        case nowOrNever = "now_or_never"
        case deviceStage = "device_stage"
        case receipts
    }
}

/// `POST /v1/broadcasts`: one message to every member of a group.
@MemberwiseInit
public struct BroadcastRequest: Sendable, Codable, Hashable {
    /// The members (users); a user listed twice gets it once.
    public var to: [String]
    public var from: Party
    public var conversation: String
    public var text: String
    public var idempotencyKey: String?
    /// The push options, as on `MessageRequest`, for every member's pushes.
    public var options: MessagePushFields = .init()

    public init(from decoder: any Decoder) throws {
        to = try decoder.container(keyedBy: CodingKeys.self).decode([String].self, forKey: .to)
        (from, conversation, text, idempotencyKey, options) = try MessagePushFields.message(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(to, forKey: .to)
        try options.encode(message: (from, conversation, text, idempotencyKey), to: encoder)
    }

    /// The field besides the ones a message shares (`MessagePushFields.MessageKeys`).
    enum CodingKeys: String, CodingKey, CaseIterable {
        case to
    }
}

/// What a broadcast made: each member's ingest receipt.
@MemberwiseInit
public struct BroadcastReceipt: Sendable, Codable, Hashable {
    @MemberwiseInit
    public struct Member: Sendable, Codable, Hashable {
        public var user: String
        public var receipt: IngestReceipt
    }

    public var members: [Member]
}
