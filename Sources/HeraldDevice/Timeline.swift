public import Foundation
import Synchronization

/// One step of a flow: who did what to whom, and what travelled.
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
    public var priority: Int?
    public var topic: String?
    public var payloadBytes: Int?
    /// More, for people (never message text unless it is what the user sees).
    public var detail: String?

    public init(
        elapsedMs: Int64,
        from: String,
        to: String,
        step: String,
        pushType: String? = nil,
        priority: Int? = nil,
        topic: String? = nil,
        payloadBytes: Int? = nil,
        detail: String? = nil
    ) {
        self.elapsedMs = elapsedMs
        self.from = from
        self.to = to
        self.step = step
        self.pushType = pushType
        self.priority = priority
        self.topic = topic
        self.payloadBytes = payloadBytes
        self.detail = detail
    }

    enum CodingKeys: String, CodingKey {
        case elapsedMs = "elapsed_ms"
        case from, to, step
        case pushType = "push_type"
        case priority, topic
        case payloadBytes = "payload_bytes"
        case detail
    }
}

/// The events of a flow in order, shared by every component of one emulated phone (and the
/// simulation driving it). `now` is the clock: real, or simulated.
public final class Timeline: Sendable {
    private let events = Mutex<[TimelineEvent]>([])
    private let start: Int64
    private let now: @Sendable () -> Int64
    private let observer: @Sendable (TimelineEvent) -> Void

    /// - Parameters:
    ///   - now: milliseconds since the epoch.
    ///   - observer: told of each event as it is recorded (say, to print it).
    public init(now: @escaping @Sendable () -> Int64, observer: @escaping @Sendable (TimelineEvent) -> Void = { _ in })
    {
        self.now = now
        self.start = now()
        self.observer = observer
    }

    /// The clock, in milliseconds since the epoch.
    public var time: Int64 { now() }

    /// Records a step, now or at `at` (milliseconds since the epoch) when it happened earlier
    /// elsewhere (say, the relay's record of when APNs accepted a push).
    public func record(
        _ from: String,
        _ to: String,
        _ step: String,
        pushType: String? = nil,
        priority: Int? = nil,
        topic: String? = nil,
        payloadBytes: Int? = nil,
        detail: String? = nil,
        at: Int64? = nil
    ) {
        let event = TimelineEvent(
            elapsedMs: (at ?? now()) - start,
            from: from,
            to: to,
            step: step,
            pushType: pushType,
            priority: priority,
            topic: topic,
            payloadBytes: payloadBytes,
            detail: detail
        )
        events.withLock { $0.append(event) }
        observer(event)
    }

    /// Every event, in time order (events recorded later for an earlier time take their place).
    public var all: [TimelineEvent] {
        events.withLock { events in
            events.enumerated().sorted { ($0.element.elapsedMs, $0.offset) < ($1.element.elapsedMs, $1.offset) }
                .map(\.element)
        }
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
        if let priority = event.priority { facts.append("priority \(priority)") }
        if let topic = event.topic { facts.append("topic \(topic)") }
        if let bytes = event.payloadBytes { facts.append("\(bytes) B") }
        if !facts.isEmpty { text += "  [" + facts.joined(separator: ", ") + "]" }
        if let detail = event.detail { text += "  " + detail }
        return text
    }

    static func arrow(_ event: TimelineEvent) -> String {
        event.from == event.to ? event.from : event.from + " → " + event.to
    }
}
