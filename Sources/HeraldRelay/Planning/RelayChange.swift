import HeraldPush
import HeraldRelayAPI
import HeraldStore

/// What a planner decided for one relay operation: the rows to write, and what to do once they
/// are written. A planner reads nothing and writes nothing; `RelayContext.commit` is the one
/// place that carries a change out.
struct RelayChange: Sendable, Equatable {
    /// Written in one transaction (`ChangeStore.apply`).
    var writes: [StoreChange]
    /// Carried out after the writes committed, whatever they answered.
    var effects: [RelayEffect] = []
    /// Carried out after the writes committed, only when every write was applied (store work:
    /// done, whatever it answered).
    var effectsWhenApplied: [RelayEffect] = []
    /// Carried out when a write was not applied, or the writes failed: what the operation took
    /// before it wrote (room in the dispatcher) goes back.
    var effectsUnlessApplied: [RelayEffect] = []
    /// The refusal when a write found its row gone (`ChangeOutcome.stale`); without one, a stale
    /// write is an answer the operation reads itself.
    var refusalWhenStale: RelayError?
    /// The refusal when the store refused a write as conflicting with what it holds
    /// (`StoreError.conflict`, e.g. an event for a chat that ended); without one, that is a store
    /// failure like any other.
    var refusalWhenConflict: RelayError?
}

/// Something the relay does after a change committed: never a store write (those are the
/// change's), so carrying it out twice or not at all loses nothing durable.
enum RelayEffect: Sendable, Equatable {
    /// Counts a device activation (`herald_relay_activations_total`).
    case countActivation
    /// Releases what is held for a user: a device of theirs can take it now.
    case releaseHeld(userID: String)
    /// Wakes the webhook dispatcher: events were written.
    case wakeWebhooks
    /// Caches a saved app on this node and tells the node's hooks.
    case appSaved(AppRecord)
    /// One line at `info`: ids and states only, never content.
    case log(String, [String: String])
    /// Counts pushes queued, or skipped, by an ingest (`herald_relay_pushes_*_total`).
    case count(RelayCount, Int)
    /// Hands pushes written claimed by this node to its dispatcher (`PushHandOff.handOff`).
    case handOff([ClaimedPush], IngestClaim)
    /// Gives back the dispatcher's room reserved for an ingest that wrote nothing.
    case releaseClaim(IngestClaim)
    /// Wakes the dispatchers: pushes were queued.
    case wakeDispatchers
    /// Wakes the callback scheduler: a callback was scheduled or snoozed.
    case wakeCallbacks
    /// Wakes the deadline scheduler: deadlines were armed.
    case wakeDeadlines
    /// A frame to a device over its live channel, if this node holds it (best effort).
    case frame(LiveServerFrame, to: String)
    /// Times a push from its acceptance to the phone's `shown` receipt
    /// (`herald_relay_push_shown_seconds`, by app and network).
    case observeShown(app: String, network: PushNetwork, after: Int64)
}

/// The relay's counters a change's effects move.
enum RelayCount: Sendable, Equatable {
    case queued
    case skipped
    /// Messages accepted (`herald_relay_messages_accepted_total`).
    case messages
    /// `herald_relay_undeliverable_messages_total`, by what became of the message.
    case undeliverable(UndeliverableOutcome)
    case callbacksScheduled
    case callbackAnswers
    case callbackPushes
    /// `herald_relay_calls_ended_total`, by the state the call ended in.
    case callEnded(CallState)
    /// `herald_relay_receipts_total`, by stage, app and network: with the pushes delivered, the
    /// ratio accepted → shown.
    case receipts(ReceiptStage, app: String, network: PushNetwork)
    /// `herald_relay_push_escalations_total`, by action and app: pushes not shown in time.
    case escalations(DeadlineAction, app: String)
    /// `herald_relay_calls_unreported_total`, by app: VoIP pushes the app did not report to
    /// CallKit.
    case callsUnreported(app: String)
}

/// A change with the answer the operation gives once it is committed.
struct Planned<Answer: Sendable>: Sendable {
    var change: RelayChange
    var answer: Answer
}
