import HeraldMacros

/// One event for an app's webhook, written by the store in the same transaction as the change it
/// reports (a call answered, a push finished …), so that a change is never stored without its
/// event nor an event without its change.
///
/// `data` holds ids, states, reasons and times only: never a message's text or sender, a caller's
/// name or a dialog's labels (those stay sealed where they are kept). Its JSON is what the
/// receiver gets as the event's `data`.
@MemberwiseInit
public struct WebhookEvent: Sendable, Hashable {
    /// Unique, time-ordered; the receiver deduplicates by it (delivery is at least once).
    public var id: String
    /// The app whose webhook receives it.
    public var appID: String
    public var type: WebhookEventType
    /// Events with the same key are delivered one after the other, in the order they were
    /// written (`call:<id>`, `callback:<id>`, `conversation:<id>`, `device:<id>`, `push:<id>`).
    public var orderingKey: String
    /// The event's `data`: a JSON object, as text.
    public var data: String
    /// When the change happened, milliseconds since the epoch.
    public var createdAt: Int64
    /// The W3C `traceparent` of the push the event reports, when tracing was on as the push was
    /// made: the webhook's delivery joins that push's trace (docs/tracing.md). Written by the
    /// store from the push's row; never part of the event's body.
    public var traceParent: String?
}

/// An event as stored, with its delivery state.
@MemberwiseInit
public struct StoredWebhookEvent: Sendable, Hashable {
    public var event: WebhookEvent
    public var state: WebhookEventState
    /// How many times it was sent.
    public var attempts: Int
    /// When it may be sent next (while pending).
    public var nextAttemptAt: Int64
    /// The last failed attempt's reason (`HTTP 503`, `connection refused` …), if any.
    public var lastError: String?
    /// When the receiver accepted it.
    public var deliveredAt: Int64?
    public var updatedAt: Int64
}

/// The durable queue of webhook events.
///
/// Events are written with the change they report: a store method that makes such a change takes
/// the events to write with it (the engines share one way to write them);
/// `StoreChange.enqueueWebhookEvents` is for events that report no stored change of their own
/// (pending and due at their `createdAt`; an event id already stored is left as it is).
public protocol WebhookStore: Sendable {
    /// An event with its delivery state, or `nil` if unknown.
    func webhookEvent(id: String) async throws -> StoredWebhookEvent?
}

/// How a sent event ended, as its sender reports it.
public enum WebhookCompletion: Sendable, Hashable {
    /// The receiver answered 2xx.
    case delivered
    /// It failed (`error` says how) and is tried again at `at` (milliseconds since the epoch).
    case retry(at: Int64, error: String)
    /// Given up on: it is never sent again.
    case failed(error: String)

    /// The event's columns once it ended so at `now`: its state, next attempt (`nil` keeps it),
    /// last error (`nil` keeps it) and delivery time.
    public func columns(
        now: Int64
    ) -> (
        state: WebhookEventState, nextAttempt: Int64?, error: String?, deliveredAt: Int64?
    ) {
        switch self {
        case .delivered: (.delivered, nil, nil, now)
        case .retry(let at, let error): (.pending, at, error, nil)
        case .failed(let error): (.failed, nil, error, nil)
        }
    }
}

/// Where a listing of events goes on from: the last event of the page before.
@MemberwiseInit
public struct WebhookEventCursor: Sendable, Hashable {
    public var createdAt: Int64
    public var id: String
}

/// What the senders of events need from the queue: claims under a lease, completions, listings
/// and retention.
///
/// Order: of the undelivered (pending or sending) events of one ordering key, only the first one
/// written can be claimed, so a receiver gets a key's events one after the other, each after the
/// one before was delivered or given up on.
public protocol WebhookQueueStore: ChangeStore {
    /// An app's events, oldest first, after `cursor`, in `state` when given.
    func webhookEvents(
        app: String,
        state: WebhookEventState?,
        limit: Int,
        after cursor: WebhookEventCursor?
    )
        async throws -> [StoredWebhookEvent]
    /// The events of one ordering key (`push:<id>`, `call:<id>` …), in the order they were
    /// written, at most `limit`: what a push's page shows was sent back about it.
    func webhookEvents(orderingKey: String, limit: Int) async throws -> [StoredWebhookEvent]
    /// How many events wait to be delivered (pending or sending).
    func webhookQueueDepth() async throws -> Int
}
