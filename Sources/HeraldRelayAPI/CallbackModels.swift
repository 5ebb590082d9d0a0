public import HeraldStore

/// `POST /v1/callbacks`: the contact center schedules a callback (seed 002).
public struct CallbackRequest: Sendable, Codable, Hashable {
    /// The user to call back.
    public var userID: String
    /// The app whose devices get the push; the user's devices' app when omitted.
    public var app: String?
    /// The contact center's service id (GMS `_id`), sealed in the push and at rest.
    public var serviceID: String
    /// When to push, RFC 3339; now when omitted.
    public var at: String?
    /// When the callback expires unanswered, RFC 3339; an hour after `at` when omitted.
    public var expires: String?
    /// The dialog to show; seed 002's when omitted.
    public var dialog: Dialog?
    /// Makes the request happen at most once: a repeat answers the first callback.
    public var idempotencyKey: String?

    /// The dialog: a title, a text and one to four actions.
    public struct Dialog: Sendable, Codable, Hashable {
        public var title: String
        public var text: String
        public var actions: [Action]

        public init(title: String, text: String, actions: [Action]) {
            self.title = title
            self.text = text
            self.actions = actions
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case title, text, actions
        }
    }

    /// One choice: `kind` is `connect`, `snooze` (with `delay_seconds`) or `cancel`.
    public struct Action: Sendable, Codable, Hashable {
        public var id: String
        public var label: String
        public var kind: String
        public var delaySeconds: Int?

        public init(id: String, label: String, kind: String, delaySeconds: Int? = nil) {
            self.id = id
            self.label = label
            self.kind = kind
            self.delaySeconds = delaySeconds
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case id, label, kind
            case delaySeconds = "delay_seconds"
        }
    }

    public init(
        userID: String,
        app: String? = nil,
        serviceID: String,
        at: String? = nil,
        expires: String? = nil,
        dialog: Dialog? = nil,
        idempotencyKey: String? = nil
    ) {
        self.userID = userID
        self.app = app
        self.serviceID = serviceID
        self.at = at
        self.expires = expires
        self.dialog = dialog
        self.idempotencyKey = idempotencyKey
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case userID = "user_id"
        case app
        case serviceID = "service_id"
        case at, expires, dialog
        case idempotencyKey = "idempotency_key"
    }
}

/// A callback's state and history (`GET /v1/callbacks/{id}`, and the answer to `POST`). Times
/// are RFC 3339 in UTC with milliseconds. Never the dialog's labels or the service id.
public struct CallbackView: Sendable, Codable, Hashable {
    public struct Event: Sendable, Codable, Hashable {
        /// `scheduled`, `pushed`, `action` or `expired`.
        public var event: String
        public var at: String
        /// The state the event left the callback in.
        public var state: CallbackState
        /// The action's id, for `action`.
        public var action: String?
        /// The push's number, for `pushed`.
        public var push: Int?
        /// When the next push is due, for `scheduled` and a snooze.
        public var nextPushAt: String?

        public init(
            event: String,
            at: String,
            state: CallbackState,
            action: String? = nil,
            push: Int? = nil,
            nextPushAt: String? = nil
        ) {
            self.event = event
            self.at = at
            self.state = state
            self.action = action
            self.push = push
            self.nextPushAt = nextPushAt
        }

        enum CodingKeys: String, CodingKey {
            case event, at, state, action, push
            case nextPushAt = "next_push_at"
        }
    }

    public var callbackID: String
    public var userID: String
    public var app: String
    public var state: CallbackState
    /// When the next push is due, while scheduled.
    public var nextPushAt: String?
    public var expires: String
    /// How many times it was pushed.
    public var pushes: Int
    /// The last action's id, once answered.
    public var lastAction: String?
    public var history: [Event]
    /// The request repeated an idempotency key: this is the first request's callback.
    public var duplicate: Bool?

    public init(
        callbackID: String,
        userID: String,
        app: String,
        state: CallbackState,
        nextPushAt: String?,
        expires: String,
        pushes: Int,
        lastAction: String?,
        history: [Event],
        duplicate: Bool? = nil
    ) {
        self.callbackID = callbackID
        self.userID = userID
        self.app = app
        self.state = state
        self.nextPushAt = nextPushAt
        self.expires = expires
        self.pushes = pushes
        self.lastAction = lastAction
        self.history = history
        self.duplicate = duplicate
    }

    enum CodingKeys: String, CodingKey {
        case callbackID = "callback_id"
        case userID = "user_id"
        case app, state
        case nextPushAt = "next_push_at"
        case expires, pushes
        case lastAction = "last_action"
        case history, duplicate
    }
}

/// The answer to `POST /v1/callbacks/{id}/actions/{action}`: what happens next.
public struct CallbackAnswerView: Sendable, Codable, Hashable {
    public var callbackID: String
    public var action: String
    /// `connect`, `snooze` or `cancel`.
    public var kind: String
    /// `connected`, `scheduled` (snoozed) or `cancelled`.
    public var state: CallbackState
    /// For a snooze: when the next push is due.
    public var nextPushAt: String?

    public init(callbackID: String, action: String, kind: String, state: CallbackState, nextPushAt: String?) {
        self.callbackID = callbackID
        self.action = action
        self.kind = kind
        self.state = state
        self.nextPushAt = nextPushAt
    }

    enum CodingKeys: String, CodingKey {
        case callbackID = "callback_id"
        case action, kind, state
        case nextPushAt = "next_push_at"
    }
}
