public import HeraldCrypto
import HeraldMacros
public import HeraldStore

/// A callback's life (seed 002) as a state machine: events in, actions out, no I/O.
///
/// ```
/// scheduled ──due──▶ pushed ──ready──▶ connected
///     ▲                 │ ──cancel─▶ cancelled
///     └──snooze (delay)─┘
/// scheduled | pushed ──its expiration passes──▶ expired
/// ```
///
/// The relay reads a callback, runs the machine on what happened, and writes the new state with
/// the actions' effects in one compare-and-set (`CallbackStore.changeCallback`), so two answers
/// at once have one winner.
@MemberwiseInit
public struct CallbackMachine: Sendable, Hashable {
    /// Where the callback is; the store keeps it.
    public typealias State = CallbackState

    /// What happened.
    public enum Event: Sendable, Hashable {
        /// The relay's clock reached the callback's due time or its expiration (`at` is now).
        case due(at: Int64)
        /// A device answered with one of the dialog's actions.
        case answered(CallbackAction, at: Int64)
    }

    /// What the relay must do.
    public enum Action: Sendable, Hashable {
        /// Push the dialog to the user's devices, as push number `sequence`.
        case push(sequence: Int)
        /// Push again at this time (milliseconds since the epoch).
        case scheduleNextPush(at: Int64)
        /// Tell the backend (a webhook event of this type).
        case report(WebhookEventType)
    }

    /// Why an answer was refused.
    public enum Refusal: Error, Sendable, Hashable {
        /// Not pushed yet (or snoozed and waiting for its next push): nothing to answer.
        case notWaitingForAnAnswer
        /// Connected, cancelled or expired already.
        case alreadyFinished(State)
    }

    public private(set) var state: State
    /// When the next push is due, while scheduled.
    public private(set) var dueAt: Int64
    public let expiresAt: Int64
    /// How many times it was pushed.
    public private(set) var pushes: Int

    /// The machine of a stored callback.
    public init(_ record: CallbackRecord) {
        self.init(state: record.state, dueAt: record.dueAt, expiresAt: record.expiresAt, pushes: record.pushes)
    }

    /// Handles one event; an answer that cannot be taken now throws and changes nothing.
    public mutating func handle(_ event: Event) throws(Refusal) -> [Action] {
        switch (state, event) {
        case (.scheduled, .due(let now)), (.pushed, .due(let now)):
            if now >= expiresAt {
                state = .expired
                return [.report(.callbackExpired)]
            }
            guard state == .scheduled, now >= dueAt else { return [] }
            state = .pushed
            pushes += 1
            return [.push(sequence: pushes), .report(.callbackPushed)]
        case (.connected, .due), (.cancelled, .due), (.expired, .due):
            return []
        case (.pushed, .answered(let action, let now)):
            if now >= expiresAt {
                // Too late: the expiration passed; the relay's next pass records it.
                throw .alreadyFinished(.expired)
            }
            switch action.kind {
            case .connect:
                state = .connected
                return [.report(.callbackAction)]
            case .cancel:
                state = .cancelled
                return [.report(.callbackAction)]
            case .snooze:
                state = .scheduled
                dueAt = now + Int64(action.delaySeconds) * 1000
                return [.scheduleNextPush(at: dueAt), .report(.callbackAction)]
            }
        case (.scheduled, .answered):
            throw .notWaitingForAnAnswer
        case (.connected, .answered), (.cancelled, .answered), (.expired, .answered):
            throw .alreadyFinished(state)
        }
    }
}
