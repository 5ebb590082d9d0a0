public import Foundation
public import HeraldDomain
import HeraldMacros
import Synchronization

/// Where a step stands in the life of one push, from the backend's request to what the user did
/// with it: the steps of one push happen in this order whatever the clocks that timed them say.
public enum TimelineStage: String, Codable, Sendable, Hashable, CaseIterable, Comparable {
    /// The backend asked the relay (`POST /v1/messages`, `POST /v1/calls`).
    case requested
    /// The push network (APNs, FCM) accepted the push from the relay.
    case accepted
    /// The network delivered it to the phone.
    case delivered
    /// Code on the phone (the NSE, the messaging service, the PushKit handler) opened it.
    case opened
    /// The user sees it: a notification, a ringing phone.
    case shown
    /// The user acted on it: a tap, an answer, and what followed.
    case acted

    private var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }
}

/// A push's priority as its network names it: APNs's 10, 5 or 1; FCM's `HIGH` or `NORMAL`. In
/// JSON, a number for APNs and a string for FCM.
public enum TimelinePriority: Codable, Sendable, Hashable, CustomStringConvertible {
    case apns(Int)
    case fcm(String)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int.self) {
            self = .apns(number)
        } else {
            self = .fcm(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .apns(let number): try container.encode(number)
        case .fcm(let name): try container.encode(name)
        }
    }

    /// `5`, `HIGH`: the value as the network's own field carries it.
    public var value: String {
        switch self {
        case .apns(let number): String(number)
        case .fcm(let name): name
        }
    }

    /// `p5`, `HIGH`: short, for a label.
    public var description: String {
        switch self {
        case .apns(let number): "p\(number)"
        case .fcm(let name): name
        }
    }
}

/// One step of a flow: who did what to whom, and what travelled.
@MemberwiseInit
public struct TimelineEvent: Codable, Sendable, Hashable {
    /// Milliseconds since the timeline started (simulated time where the clock is simulated).
    public var elapsedMs: Int64
    /// The component acting (`backend`, `relay`, `apns`, `app`, `sdk`, `nse`, `pushkit`,
    /// `callkit`, `notification-center`, `user`).
    public var from: String
    /// The component acted on; the same as `from` for a step inside one component.
    public var to: String
    public var step: String
    public var pushType: String?
    public var priority: TimelinePriority?
    public var topic: String?
    public var payloadBytes: Int?
    /// More, for people (never message text unless it is what the user sees).
    public var detail: String?
    /// The message or call the step belongs to (its id), with `stage`: the steps of one push
    /// keep their causal order by them.
    public var subject: String?
    public var stage: TimelineStage?
    /// What the user sees at this step, as the phone shows it: a notification's sender and text,
    /// a caller's name, the opened conversation.
    public var userSees: String?
    /// For a step another component reported on its own clock (the relay's record of when APNs
    /// accepted a push): that time, in milliseconds since the timeline started. `elapsedMs` is
    /// then where the step must have been: the report, moved between the steps of the same push
    /// that come before and after it when the other clock (or the moment it recorded) disagrees.
    public var reportedMs: Int64?

    enum CodingKeys: String, CodingKey {
        case elapsedMs = "elapsed_ms"
        case from, to, step
        case pushType = "push_type"
        case priority, topic
        case payloadBytes = "payload_bytes"
        case detail, subject, stage
        case userSees = "user_sees"
        case reportedMs = "reported_ms"
    }
}

/// The events of a flow in order, shared by every component of one emulated phone (and the
/// simulation driving it), on one clock: real, or simulated.
public final class Timeline: Sendable {
    private let events = Mutex<[TimelineEvent]>([])
    private let start: Int64
    /// The clock events are timed on, which the phone's parts share.
    public let clock: any HeraldClock
    private let observer: @Sendable (TimelineEvent) -> Void
    /// A second phone's view of a shared timeline: its steps go to `base`, its own components
    /// named apart (`callkit · pad`).
    private let base: (timeline: Timeline, device: String)?

    /// The components that live on a phone (named apart on a second phone's view).
    static let phoneComponents: Set<String> = [
        "sdk", "app", "nse", "fcm-service", "service-worker", "pushkit", "callkit", "call-screen",
        "call-notification", "notification-center", "notification", "user",
    ]

    /// Another phone's view of `timeline`: what it records lands there, with the phone's own
    /// components and its subjects suffixed with `device`, so two phones of one user stand side
    /// by side, each with its own order of a push's stages.
    public init(sharing timeline: Timeline, device: String) {
        self.clock = timeline.clock
        self.start = timeline.start
        self.observer = { _ in }
        self.base = (timeline, device)
    }

    /// - Parameters:
    ///   - clock: what events are timed on (a `TestClock` in simulations).
    ///   - observer: told of each event as it is recorded (say, to print it), in the order of
    ///     recording, which for a step reported late is not its place in `all`.
    public init(clock: any HeraldClock, observer: @escaping @Sendable (TimelineEvent) -> Void = { _ in }) {
        self.clock = clock
        self.start = clock.now()
        self.observer = observer
        self.base = nil
    }

    /// The clock, in milliseconds since the epoch.
    public var time: Int64 { clock.now() }

    /// Records a step: now, at `at` (milliseconds since the epoch on this timeline's clock) when
    /// it began earlier (a request recorded once answered), or as reported at `reportedAt` on
    /// another component's clock (the relay's record of when APNs accepted a push), which `all`
    /// places among the steps of the same `subject` by `stage`.
    public func record(
        _ from: String,
        _ to: String,
        _ step: String,
        pushType: String? = nil,
        priority: TimelinePriority? = nil,
        topic: String? = nil,
        payloadBytes: Int? = nil,
        detail: String? = nil,
        subject: String? = nil,
        stage: TimelineStage? = nil,
        userSees: String? = nil,
        at: Int64? = nil,
        reportedAt: Int64? = nil
    ) {
        record(
            TimelineEvent(
                elapsedMs: 0,
                from: from,
                to: to,
                step: step,
                pushType: pushType,
                priority: priority,
                topic: topic,
                payloadBytes: payloadBytes,
                detail: detail,
                subject: subject,
                stage: stage,
                userSees: userSees
            ),
            at: at,
            reportedAt: reportedAt
        )
    }

    /// Records `step` (its time not yet set): on the base timeline when this is a second
    /// phone's view, with the phone's components and subject named apart.
    private func record(_ step: TimelineEvent, at: Int64?, reportedAt: Int64?) {
        if let (timeline, device) = base {
            func named(_ component: String) -> String {
                Self.phoneComponents.contains(component) ? component + " · " + device : component
            }
            var step = step
            step.from = named(step.from)
            step.to = named(step.to)
            // The device's own chain of stages (delivered, opened, shown) for the subject.
            step.subject = step.subject.map { $0 + " · " + device }
            timeline.record(step, at: at, reportedAt: reportedAt)
            return
        }
        var event = step
        event.elapsedMs = (reportedAt ?? at ?? clock.now()) - start
        event.reportedMs = reportedAt.map { $0 - start }
        events.withLock { $0.append(event) }
        observer(event)
    }

    /// Every event in causal order: by time, except that the steps of one subject always follow
    /// its stages (a push is accepted before it is delivered, delivered before it is shown), and
    /// a step reported on another clock takes the time its neighbours in that order allow.
    public var all: [TimelineEvent] {
        if let (timeline, _) = base { return timeline.all }
        return Self.causalOrder(events.withLock { $0 })
    }

    /// `events` (in the order recorded) in causal order; see `all`.
    static func causalOrder(_ recorded: [TimelineEvent]) -> [TimelineEvent] {
        var events = recorded
        // Steps timed on this clock bound the reported ones: a reported step lies after the
        // latest earlier-stage step of its subject and before the earliest later-stage one.
        for index in events.indices {
            guard events[index].reportedMs != nil, let subject = events[index].subject,
                let stage = events[index].stage
            else { continue }
            let local = recorded.filter { $0.subject == subject && $0.reportedMs == nil }
            let lower = local.filter { $0.stage.map { $0 < stage } ?? false }.map(\.elapsedMs).max()
            let upper = local.filter { $0.stage.map { $0 > stage } ?? false }.map(\.elapsedMs).min()
            var placed = events[index].elapsedMs
            if let upper { placed = min(placed, upper) }
            if let lower { placed = max(placed, lower) }
            events[index].elapsedMs = placed
        }
        // Then by time, recording order breaking ties, taking a step only once every step of an
        // earlier stage of its subject is taken.
        var pending = events.indices.sorted { (events[$0].elapsedMs, $0) < (events[$1].elapsedMs, $1) }
        var ordered: [TimelineEvent] = []
        ordered.reserveCapacity(events.count)
        while !pending.isEmpty {
            let next =
                pending.firstIndex { candidate in
                    let event = events[candidate]
                    guard let subject = event.subject, let stage = event.stage else { return true }
                    return !pending.contains { other in
                        events[other].subject == subject && (events[other].stage.map { $0 < stage } ?? false)
                    }
                } ?? 0
            ordered.append(events[pending.remove(at: next)])
        }
        return ordered
    }

    /// The events as a JSON array.
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(all)
    }

    /// One line per event, for a terminal.
    public static func line(_ event: TimelineEvent) -> String {
        let seconds = String(format: "%9.3f s", Double(event.elapsedMs) / 1000)
        let who = arrow(event)
        var text = seconds + "  " + who + String(repeating: " ", count: max(1, 28 - who.count)) + event.step
        var facts: [String] = []
        if let pushType = event.pushType { facts.append("push-type \(pushType)") }
        if let priority = event.priority { facts.append("priority \(priority.value)") }
        if let topic = event.topic { facts.append("topic \(topic)") }
        if let bytes = event.payloadBytes { facts.append("\(bytes) B") }
        if !facts.isEmpty { text += "  [" + facts.joined(separator: ", ") + "]" }
        if let seen = event.userSees { text += "  “" + seen + "”" }
        if let detail = event.detail { text += "  " + detail }
        return text
    }

    static func arrow(_ event: TimelineEvent) -> String {
        event.from == event.to ? event.from : event.from + " → " + event.to
    }
}
