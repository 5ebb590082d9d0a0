import HeraldMacros

/// One callback as the store keeps it. The dialog and the service id are in `sealedDialog`,
/// sealed by the relay with the master key; the store never sees them.
@MemberwiseInit
public struct CallbackRecord: Sendable, Hashable {
    public var id: String
    public var appID: String
    public var userID: String
    public var state: CallbackState
    /// The service id and the dialog, sealed at rest.
    public var sealedDialog: [UInt8]
    /// When the next push is due (while scheduled), milliseconds since the epoch.
    public var dueAt: Int64
    /// When it expires unanswered, milliseconds since the epoch.
    public var expiresAt: Int64
    /// How many times it was pushed.
    public var pushes: Int = 0
    /// Moves by one with every change and every claim: the compare-and-set of `changeCallback`.
    public var version: Int = 0
    /// The last action's id, once answered.
    public var lastAction: String?
    public var createdAt: Int64
    public var updatedAt: Int64
}

/// One line of a callback's history.
@MemberwiseInit
public struct CallbackHistoryEntry: Sendable, Hashable {
    /// What happened.
    public enum Event: String, Sendable, Hashable, Codable, CaseIterable {
        case scheduled
        case pushed
        case action
        case expired
    }

    public var at: Int64
    public var event: Event
    /// The state it left the callback in.
    public var state: CallbackState
    /// The action's id, for `action`.
    public var action: String?
    /// For `pushed`: the push's number (1, 2 …).
    public var sequence: Int?
    /// When the next push is due, for `scheduled` (and a snooze).
    public var nextPushAt: Int64?
}

/// One change of a callback, made only if nobody changed or claimed it since it was read.
@MemberwiseInit
public struct CallbackChange: Sendable, Hashable {
    public var callbackID: String
    /// The version read; the change is made only if the callback still has it.
    public var expectedVersion: Int
    public var state: CallbackState
    public var dueAt: Int64
    /// Counted into `pushes` (0 or 1).
    public var pushed: Int = 0
    public var lastAction: String?
    /// The history lines the change adds, oldest first.
    public var history: [CallbackHistoryEntry]
    /// The pushes queued with it (a due callback's alert to each of the user's devices).
    public var pushes: [OutboxEntry] = []
    /// The webhook events reporting it.
    public var events: [WebhookEvent] = []
    /// For an answer: the number of the push it answers. The store writes that push's
    /// `callback.pushed` event ahead of `events` unless its delivery wrote it already: the device
    /// answered, so the push reached it, and the backend hears of the push before the answer.
    public var answeredPush: Int?
    public var now: Int64
}

/// How the outbox names a callback's push (`OutboxEntry.subjectID`): `<callback id>#<push
/// number>`, as the device's extension names it. The store reads the callback and the push
/// number back from it when the push is delivered, to write the callback's `callback.pushed`.
public enum CallbackPushSubject {
    /// The subject of push `push` (1, 2 …) of `callbackID`.
    public static func make(callbackID: String, push: Int) -> String { "\(callbackID)#\(push)" }

    /// The id of that push's `callback.pushed` event: one event per push number, however many
    /// devices it went to and whichever writes it first (a delivery or the answer).
    public static func pushedEventID(callbackID: String, push: Int) -> String {
        "callback.pushed:" + make(callbackID: callbackID, push: push)
    }
}

/// Callbacks (seed 002): scheduled by the backend, pushed when due, answered by a device.
///
/// Every write is durable when it returns. `claimDueCallbacks` is safe with several relay nodes
/// on one database: a callback is claimed by one owner at a time, and a claim not followed by a
/// change before its lease ends is claimed again. A claim moves the version, so a change made
/// under a claim that was lost (its lease ended and another node claimed) is refused: a due
/// callback is pushed once.
///
/// A callback's push (kind `callback`, subject `CallbackPushSubject`) finished `delivered`
/// (`OutboxStore.complete`) writes the callback's `callback.pushed` event in the same
/// transaction, once per push number (id `CallbackPushSubject.pushedEventID`), while the callback
/// still waits for the answer to that push; a push failed, expired or whose token is dead writes
/// none. Schedules and changes are `StoreChange`s.
public protocol CallbackStore: ChangeStore {
    /// A callback as it is now, or `nil`.
    func callback(id: String) async throws -> CallbackRecord?
    /// The callback scheduled under an idempotency key, as it is now, or `nil`.
    func callback(idempotencyKey: String) async throws -> CallbackRecord?
    /// The callbacks still waiting (`scheduled`, or `pushed` and not answered), by due time
    /// (then id), at most `limit`.
    func pendingCallbacks(limit: Int) async throws -> [CallbackRecord]
    /// A callback's history, oldest first; empty for an unknown callback.
    func callbackHistory(id: String) async throws -> [CallbackHistoryEntry]
    /// When the next scheduled callback is due (or expires), if any.
    func nextCallbackDueTime() async throws -> Int64?
    /// The webhook events written with a callback's changes (ordering key `callback:<id>`),
    /// oldest first, with their delivery state.
    func callbackWebhookEvents(callbackID: String) async throws -> [StoredWebhookEvent]
}
