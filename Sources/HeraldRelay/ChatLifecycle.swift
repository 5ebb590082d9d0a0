public import HeraldStore

/// A chat's life as the relay decides it, as a state machine: events in, actions out, no I/O.
///
/// - No chat: the first event starts one.
/// - Open: an event is appended and moves the last event time; `end` ends it now.
/// - Idle (no event for `idleEnd`): it ended when it became idle, at its last event plus
///   `idleEnd`, whether or not the janitor has recorded it yet. An event is refused and the end
///   recorded; `end` records that earlier end, so a late end does not put the purge off.
/// - Ended: an event is refused; `end` answers the first end again (a backend may retry).
///
/// What the store keeps (`ChatRecord`) is the state's only source; the purge is the janitor's.
public struct ChatLifecycle: Sendable, Hashable {
    public enum State: Sendable, Hashable {
        case none
        case open(lastEventAt: Int64)
        case ended(at: Int64)
    }

    public enum Event: Sendable, Hashable {
        /// A transcript event arrives at this time.
        case event(at: Int64)
        /// The backend ends the chat at this time.
        case end(at: Int64)
    }

    public enum Action: Sendable, Hashable {
        /// Append the event (starting the chat if there is none).
        case append
        /// Record the end at this time.
        case recordEnd(at: Int64)
        /// Refuse the event: the chat has ended.
        case refuseEnded
        /// Answer that the chat ended at this time.
        case answerEnded(at: Int64)
        /// Answer that there is no such chat.
        case answerUnknown
    }

    public private(set) var state: State
    /// How long a chat may go without an event (milliseconds).
    public let idleEnd: Int64

    /// The state of a stored chat (`nil`: none), read now.
    public init(_ chat: ChatRecord?, idleEnd: Int64) {
        self.idleEnd = idleEnd
        if let chat {
            state = chat.endedAt.map { .ended(at: $0) } ?? .open(lastEventAt: chat.lastEventAt)
        } else {
            state = .none
        }
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (.none, .event(let time)):
            state = .open(lastEventAt: time)
            return [.append]
        case (.none, .end):
            return [.answerUnknown]
        case (.open(let last), .event(let time)) where time < last + idleEnd:
            state = .open(lastEventAt: max(last, time))
            return [.append]
        case (.open(let last), .event):
            state = .ended(at: last + idleEnd)
            return [.recordEnd(at: last + idleEnd), .refuseEnded]
        case (.open(let last), .end(let time)):
            let end = min(time, last + idleEnd)
            state = .ended(at: end)
            return [.recordEnd(at: end), .answerEnded(at: end)]
        case (.ended, .event):
            return [.refuseEnded]
        case (.ended(let end), .end):
            return [.answerEnded(at: end)]
        }
    }
}
