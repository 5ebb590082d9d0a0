public import HeraldDomain
import HeraldMacros

/// `POST /v1/callbacks`: the contact center schedules a callback (seed 002).
@MemberwiseInit
public struct CallbackRequest: Sendable, Codable, Hashable {
    /// The user to call back.
    public var userID: String
    /// The app whose devices get the push; the user's devices' app when omitted.
    public var app: String?
    /// The contact center's service id (GMS `_id`), sealed in the push and at rest.
    public var serviceID: String
    /// When to push, milliseconds since the epoch or RFC 3339; now when omitted.
    public var at: RequestTime?
    /// When the callback expires unanswered, milliseconds since the epoch or RFC 3339; an hour
    /// after `at` when omitted.
    public var expires: RequestTime?
    /// The dialog to show; seed 002's when omitted.
    public var dialog: Dialog?
    /// Makes the request happen at most once: a repeat answers the first callback.
    public var idempotencyKey: String?

    /// The dialog: a title, a text and one to four actions.
    @MemberwiseInit
    public struct Dialog: Sendable, Codable, Hashable {
        public var title: String
        public var text: String
        public var actions: [Action]

        enum CodingKeys: String, CodingKey, CaseIterable {
            case title, text, actions
        }
    }

    /// One choice: `kind` is `connect`, `snooze` (with `delay_seconds`) or `cancel`.
    @MemberwiseInit
    public struct Action: Sendable, Codable, Hashable {
        public var id: String
        public var label: String
        public var kind: String
        public var delaySeconds: Int?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case id, label, kind
            case delaySeconds = "delay_seconds"
        }
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case userID = "user_id"
        case app
        case serviceID = "service_id"
        case at, expires, dialog
        case idempotencyKey = "idempotency_key"
    }
}

/// A callback's state and history (`GET /v1/callbacks/{id}`, and the answer to `POST`). Never the
/// dialog's labels or the service id. Each time is held once, in milliseconds since the epoch, and
/// written twice: as `*_ms` / `expires_at` and, for clients written before those, as the
/// deprecated RFC 3339 field (UTC, milliseconds), so the two never disagree.
@MemberwiseInit
public struct CallbackView: Sendable, Codable, Hashable {
    @MemberwiseInit
    public struct Event: Sendable, Codable, Hashable {
        /// `scheduled`, `pushed`, `action` or `expired`.
        public var event: String
        /// When it happened, milliseconds since the epoch (`at_ms`).
        public var atMs: Int64
        /// The state the event left the callback in.
        public var state: CallbackState
        /// The action's id, for `action`.
        public var action: String?
        /// The push's number, for `pushed`.
        public var push: Int?
        /// When the next push is due, for `scheduled` and a snooze (`next_push_at_ms`).
        public var nextPushAtMs: Int64?

        /// `at`: `atMs` as RFC 3339 (deprecated in the API).
        public var at: String { RequestTime.format(atMs) }
        /// `next_push_at`: `nextPushAtMs` as RFC 3339 (deprecated in the API).
        public var nextPushAt: String? { nextPushAtMs.map(RequestTime.format) }

        enum CodingKeys: String, CodingKey {
            case event, at, state, action, push
            case atMs = "at_ms"
            case nextPushAt = "next_push_at"
            case nextPushAtMs = "next_push_at_ms"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            event = try container.decode(String.self, forKey: .event)
            atMs = try container.requiredTime(.atMs, or: .at)
            state = try container.decode(CallbackState.self, forKey: .state)
            action = try container.decodeIfPresent(String.self, forKey: .action)
            push = try container.decodeIfPresent(Int.self, forKey: .push)
            nextPushAtMs = try container.time(.nextPushAtMs, or: .nextPushAt)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(event, forKey: .event)
            try container.encodeTime(atMs, .atMs, and: .at)
            try container.encode(state, forKey: .state)
            try container.encodeIfPresent(action, forKey: .action)
            try container.encodeIfPresent(push, forKey: .push)
            try container.encodeTime(nextPushAtMs, .nextPushAtMs, and: .nextPushAt)
        }
    }

    public var callbackID: String
    public var userID: String
    public var app: String
    public var state: CallbackState
    /// When the next push is due, while scheduled, milliseconds since the epoch (`next_push_at_ms`).
    public var nextPushAtMs: Int64?
    /// When it expires unanswered, milliseconds since the epoch (`expires_at`).
    public var expiresAt: Int64
    /// How many times it was pushed.
    public var pushes: Int
    /// The last action's id, once answered.
    public var lastAction: String?
    public var history: [Event]
    /// The request repeated an idempotency key: this is the first request's callback.
    public var duplicate: Bool?

    /// `next_push_at`: `nextPushAtMs` as RFC 3339 (deprecated in the API).
    public var nextPushAt: String? { nextPushAtMs.map(RequestTime.format) }
    /// `expires`: `expiresAt` as RFC 3339 (deprecated in the API).
    public var expires: String { RequestTime.format(expiresAt) }

    enum CodingKeys: String, CodingKey {
        case callbackID = "callback_id"
        case userID = "user_id"
        case app, state
        case nextPushAt = "next_push_at"
        case nextPushAtMs = "next_push_at_ms"
        case expires
        case expiresAt = "expires_at"
        case pushes
        case lastAction = "last_action"
        case history, duplicate
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        callbackID = try container.decode(String.self, forKey: .callbackID)
        userID = try container.decode(String.self, forKey: .userID)
        app = try container.decode(String.self, forKey: .app)
        state = try container.decode(CallbackState.self, forKey: .state)
        nextPushAtMs = try container.time(.nextPushAtMs, or: .nextPushAt)
        expiresAt = try container.requiredTime(.expiresAt, or: .expires)
        pushes = try container.decode(Int.self, forKey: .pushes)
        lastAction = try container.decodeIfPresent(String.self, forKey: .lastAction)
        history = try container.decode([Event].self, forKey: .history)
        duplicate = try container.decodeIfPresent(Bool.self, forKey: .duplicate)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(callbackID, forKey: .callbackID)
        try container.encode(userID, forKey: .userID)
        try container.encode(app, forKey: .app)
        try container.encode(state, forKey: .state)
        try container.encodeTime(nextPushAtMs, .nextPushAtMs, and: .nextPushAt)
        try container.encodeTime(expiresAt, .expiresAt, and: .expires)
        try container.encode(pushes, forKey: .pushes)
        try container.encodeIfPresent(lastAction, forKey: .lastAction)
        try container.encode(history, forKey: .history)
        try container.encodeIfPresent(duplicate, forKey: .duplicate)
    }
}

/// The answer to `POST /v1/callbacks/{id}/actions/{action}`: what happens next.
@MemberwiseInit
public struct CallbackAnswerView: Sendable, Codable, Hashable {
    public var callbackID: String
    public var action: String
    /// `connect`, `snooze` or `cancel`.
    public var kind: String
    /// `connected`, `scheduled` (snoozed) or `cancelled`.
    public var state: CallbackState
    /// For a snooze: when the next push is due, milliseconds since the epoch (`next_push_at_ms`).
    public var nextPushAtMs: Int64?

    /// `next_push_at`: `nextPushAtMs` as RFC 3339 (deprecated in the API).
    public var nextPushAt: String? { nextPushAtMs.map(RequestTime.format) }

    enum CodingKeys: String, CodingKey {
        case callbackID = "callback_id"
        case action, kind, state
        case nextPushAt = "next_push_at"
        case nextPushAtMs = "next_push_at_ms"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        callbackID = try container.decode(String.self, forKey: .callbackID)
        action = try container.decode(String.self, forKey: .action)
        kind = try container.decode(String.self, forKey: .kind)
        state = try container.decode(CallbackState.self, forKey: .state)
        nextPushAtMs = try container.time(.nextPushAtMs, or: .nextPushAt)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(callbackID, forKey: .callbackID)
        try container.encode(action, forKey: .action)
        try container.encode(kind, forKey: .kind)
        try container.encode(state, forKey: .state)
        try container.encodeTime(nextPushAtMs, .nextPushAtMs, and: .nextPushAt)
    }
}

extension KeyedEncodingContainer {
    /// A time written twice, as `time(_:or:)` reads it: its RFC 3339 field (deprecated, for
    /// clients older than the milliseconds field) and its milliseconds field, from the one value
    /// so the two never disagree; neither when there is no time.
    mutating func encodeTime(_ value: Int64?, _ milliseconds: Key, and text: Key) throws {
        guard let value else { return }
        try encode(RequestTime.format(value), forKey: text)
        try encode(value, forKey: milliseconds)
    }
}

extension KeyedDecodingContainer {
    /// A time from its milliseconds field or, from a relay older than that field, its RFC 3339
    /// one; nil when neither is there.
    func time(_ milliseconds: Key, or text: Key) throws -> Int64? {
        if let value = try decodeIfPresent(Int64.self, forKey: milliseconds) { return value }
        guard let string = try decodeIfPresent(String.self, forKey: text) else { return nil }
        guard let value = RequestTime.parse(string) else {
            throw DecodingError.dataCorruptedError(forKey: text, in: self, debugDescription: "not an RFC 3339 time")
        }
        return value
    }

    /// A time that is always there, from either field.
    func requiredTime(_ milliseconds: Key, or text: Key) throws -> Int64 {
        guard let value = try time(milliseconds, or: text) else {
            throw DecodingError.keyNotFound(
                milliseconds,
                .init(codingPath: codingPath, debugDescription: "neither field is there")
            )
        }
        return value
    }
}
