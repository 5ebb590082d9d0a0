/// The relay's writes in the words they had before `StoreChange`: each one change applied alone,
/// with what the caller needs read back when the outcome alone does not say it.
extension HeraldStore {
    /// Writes a message, its pushes and its live handovers together or not at all, once per
    /// idempotency key; durable when it returns. Of concurrent ingests with one key, exactly one
    /// writes (`accepted`) and every other answers that one's receipt (`duplicate`), writing
    /// nothing.
    public func accept(_ ingest: Ingest) async throws -> IngestOutcome {
        try await ingestOutcome(apply(.accept(ingest)), ingest)
    }

    /// Writes the call's ingest (its pushes, its idempotency key) and `call` together or not at
    /// all, like `accept(_:)`: a repeated key writes nothing and answers the first receipt.
    public func acceptCall(_ ingest: Ingest, call: CallRecord) async throws -> IngestOutcome {
        try await ingestOutcome(apply(.acceptCall(ingest, call: call)), ingest)
    }

    /// Writes `ingest`'s message and idempotency key with the message held for its user until
    /// `until`, for the devices of `appID` (`nil`: of any app), once per key as `accept(_:)`
    /// does. Nothing is written and the answer is `stale` when the user has a device (of `appID`,
    /// when given) when it commits: a device that activated since the ingest read its recipients
    /// is pushed to instead, and a read of the user's held messages that follows that device's
    /// activation sees every hold written before it. The ingest's pushes and handovers are not
    /// written (a held message has none).
    public func hold(_ ingest: Ingest, until: Int64, appID: String?) async throws -> IngestOutcome {
        try await ingestOutcome(apply(.hold(ingest, until: until, appID: appID)), ingest)
    }

    /// An ingest's outcome as the relay answers it: a repeated key with the first ingest's
    /// receipt.
    public func ingestOutcome(_ outcome: ChangeOutcome, _ ingest: Ingest) async throws -> IngestOutcome {
        switch outcome {
        case .applied:
            return .accepted
        case .stale:
            return .stale
        case .duplicate:
            // The first ingest committed before this one saw its key, so its receipt is there.
            guard let key = ingest.idempotencyKey, let receipt = try await receipt(idempotencyKey: key) else {
                throw StoreError.corrupt.with(detail: "an ingest was answered duplicate, but its key has no receipt")
            }
            return .duplicate(receipt: receipt)
        case .answered:
            throw StoreError.corrupt.with(detail: "an ingest was answered as store work")
        }
    }

    /// A device of the call says it rings (see `CallRinging`). Nothing changes once the call
    /// ended. Answers the call as it is now, `nil` if unknown.
    public func reportCallRinging(
        callID: String,
        deviceID: String,
        at: Int64,
        firstRinging: [WebhookEvent]
    ) async throws -> CallRecord? {
        let ringing = CallRinging(callID: callID, deviceID: deviceID, at: at, firstRinging: firstRinging)
        try await apply(.reportCallRinging(ringing))
        return try await call(id: callID)
    }

    /// Ends a ringing call: one compare-and-set from `ringing`, and with it, in one transaction,
    /// the device's report, the events, the pushes and the stops. Of concurrent ends exactly one
    /// wins; the others answer `alreadyEnded` and write nothing.
    public func endCall(_ end: CallEnd) async throws -> CallEndOutcome {
        let outcome = try await apply(.endCall(end))
        // A call never leaves an ended state, so the call read after is the one this end (or the
        // one that came first) left.
        guard let call = try await call(id: end.callID) else { return .unknown }
        return outcome == .applied ? .ended(call) : .alreadyEnded(call)
    }

    /// Writes a new callback with its first history line, once per idempotency key; returns the
    /// callback stored under the key (this one, or the earlier one for a repeated key).
    public func scheduleCallback(
        _ record: CallbackRecord,
        history: CallbackHistoryEntry,
        idempotencyKey: String?
    ) async throws -> CallbackRecord {
        let change = StoreChange.scheduleCallback(record, history: history, idempotencyKey: idempotencyKey)
        guard try await apply(change) == .duplicate else { return record }
        guard let key = idempotencyKey, let earlier = try await callback(idempotencyKey: key) else {
            throw StoreError.corrupt.with(detail: "a callback was answered duplicate, but its key has none")
        }
        return earlier
    }

    /// Makes `change` if the callback still has `expectedVersion`: new state, due time, history,
    /// queued pushes and webhook events in one transaction, the lease released, the version
    /// moved; for an answer, first the answered push's `callback.pushed` if no delivery wrote it
    /// (`CallbackChange.answeredPush`). Returns `false`, writing nothing, if the version moved
    /// (another answer or claim won) or the callback is unknown.
    public func changeCallback(_ change: CallbackChange) async throws -> Bool {
        try await apply(.changeCallback(change)) == .applied
    }

    /// Records (or replaces) a device's disconnect from a chat, with the webhook events that
    /// report it (written in the same transaction); the device must exist.
    public func saveDisconnect(_ disconnect: ChatDisconnect, events: [WebhookEvent] = []) async throws {
        try await apply(.saveDisconnect(disconnect, events: events))
    }

    /// Notes that a disconnected device got its first push (only if it is still disconnected).
    public func markDisconnectPushed(deviceID: String, conversation: String) async throws {
        try await apply(.markDisconnectPushed(deviceID: deviceID, conversation: conversation))
    }

    /// Ends an open chat at `at`; an ended chat keeps its first end. Returns the chat after the
    /// change, or `nil` if unknown.
    public func endChat(conversation: String, at: Int64) async throws -> ChatRecord? {
        try await apply(.endChat(conversation: conversation, at: at))
        return try await chat(conversation: conversation)
    }

    /// Records the device's live session, replacing the one it had (on any node).
    public func saveLiveSession(_ session: LiveSessionRecord) async throws {
        try await apply(.saveLiveSession(session))
    }

    /// Removes the device's live session if it is still `sessionID` (a newer one is kept).
    public func removeLiveSession(deviceID: String, sessionID: String) async throws {
        try await apply(.removeLiveSession(deviceID: deviceID, sessionID: sessionID))
    }

    /// Releases held messages, each at most once, in one transaction (see
    /// `StoreChange.releaseHeld`); returns the ids of the messages released, in the order given.
    public func release(_ releases: [HeldRelease], now: Int64) async throws -> [String] {
        guard !releases.isEmpty else { return [] }
        let outcomes = try await apply(releases.map { .releaseHeld($0, now: now) })
        return zip(releases, outcomes).filter { $0.1 == .applied }.map(\.0.messageID)
    }

    /// Removes a pending live handover; true if this call removed it (it was neither settled nor
    /// taken by the sweep before).
    public func settleLiveHandover(messageID: String, deviceID: String) async throws -> Bool {
        try await apply(.settleLiveHandover(messageID: messageID, deviceID: deviceID)) == .applied
    }

    /// The heartbeat of a node (see `StoreChange.renewLiveSessions`).
    public func renewLiveSessions(nodeID: String, keeping sessionIDs: Set<String>, until: Int64) async throws {
        guard !sessionIDs.isEmpty else { return }
        try await apply(.renewLiveSessions(nodeID: nodeID, keeping: sessionIDs, until: until))
    }

    /// Records how a claimed webhook event ended, if `owner` still holds it; returns whether it
    /// did.
    public func completeWebhookEvent(
        id: String,
        owner: String,
        _ completion: WebhookCompletion,
        now: Int64
    ) async throws -> Bool {
        try await apply(.completeWebhookEvent(id: id, owner: owner, completion, now: now)) == .applied
    }

    /// Gives each record its sealed sender in place of its clear one, and forgets the clear one
    /// (it is not left in the storage's free space or logs when the engine can help it). A record
    /// that is unknown, or whose sender is already sealed, is left as it is.
    public func sealSenders(_ sealed: [ClearSender.Record: [UInt8]]) async throws {
        guard !sealed.isEmpty else { return }
        try await apply(.sealSenders(sealed))
    }
}
