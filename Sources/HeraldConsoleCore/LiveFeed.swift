public import HeraldPush
public import HeraldStore

/// One line of the console's live stream: a push accepted or changed. Where it went and what
/// became of it, never what it carried.
public struct LiveEvent: Sendable, Hashable, Codable {
    /// When it happened (the push's last change), milliseconds since the epoch.
    public var at: Int64
    public var pushID: String
    public var app: String?
    public var user: String?
    public var kind: OutboxKind
    public var network: PushNetwork
    public var state: PushState
    /// The furthest stage the phone reported.
    public var stage: ReceiptStage?
    /// The push network's or the relay's reason (`BadDeviceToken`, `retry_later`).
    public var reason: String?

    public init(_ push: PushSummary) {
        at = push.updatedAt
        pushID = push.pushID
        app = push.appID
        user = push.userID
        kind = push.kind
        network = push.network
        state = push.state
        stage = push.deviceStage
        reason = push.lastReason
    }

    enum CodingKeys: String, CodingKey {
        case at
        case pushID = "push_id"
        case app, user, kind, network, state, stage, reason
    }
}

/// What the live stream has told, so that each poll of the store turns into the events that are
/// new: a push not seen before, or one whose state, attempts or receipts moved.
///
/// The store is polled (one poller per node, whatever the number of consoles): pushes accepted
/// since a little before the last poll, and the pushes still watched re-read by id. A push is
/// watched while it may still change in a way the stream shows: until it is final and its phone
/// reported it shown (or failed), or for `watchFor` after it was first seen.
public struct LiveFeedTracker: Sendable {
    private struct Seen: Sendable {
        var firstSeen: Int64
        var state: PushState
        var attempts: Int
        var stage: ReceiptStage?
    }

    /// How long a push is re-read after it was first seen, in milliseconds.
    public let watchFor: Int64
    /// The most pushes remembered; past it the oldest are forgotten (and not re-read). By
    /// default what the store reads by id at once, so the watched pushes are one read.
    public let capacity: Int
    private var seen: [String: Seen] = [:]
    private var order: [String] = []

    public init(watchFor: Duration = .seconds(120), capacity: Int = PushSummary.maximumLookup) {
        self.watchFor = watchFor.milliseconds
        self.capacity = capacity
    }

    /// The events `pushes` (read at `now`, any order) make: the new and the changed, oldest
    /// change first.
    public mutating func observe(_ pushes: [PushSummary], now: Int64) -> [LiveEvent] {
        var events: [LiveEvent] = []
        for push in pushes {
            if var known = seen[push.pushID] {
                guard known.state != push.state || known.attempts != push.attempts || known.stage != push.deviceStage
                else { continue }
                known.state = push.state
                known.attempts = push.attempts
                known.stage = push.deviceStage
                seen[push.pushID] = known
            } else {
                seen[push.pushID] = Seen(
                    firstSeen: now,
                    state: push.state,
                    attempts: push.attempts,
                    stage: push.deviceStage
                )
                order.append(push.pushID)
            }
            events.append(LiveEvent(push))
        }
        while order.count > capacity { seen[order.removeFirst()] = nil }
        return events.sorted { ($0.at, $0.pushID) < ($1.at, $1.pushID) }
    }

    /// The pushes to re-read at `now`: seen within `watchFor` and not done changing. Pushes seen
    /// longer ago are forgotten; done ones are remembered (a later poll that reads them again
    /// tells nothing new) but not re-read.
    public mutating func watched(now: Int64) -> [String] {
        var kept: [String] = []
        var ids: [String] = []
        for id in order {
            guard let known = seen[id], now - known.firstSeen <= watchFor else {
                seen[id] = nil
                continue
            }
            kept.append(id)
            let shown = known.stage.map { $0 >= .shown } ?? false
            if !known.state.isFinal || (known.state == .delivered && !shown) { ids.append(id) }
        }
        order = kept
        return ids
    }
}
