public import HeraldStore
import PostgresNIO

extension PostgresStore: StoreWorkEngine {
    /// The store's one write: the batch in one transaction on one connection, run again from the
    /// start when it lost a race the database detected (see `transaction`). An ingest alone (the
    /// relay's most frequent write) joins the batched statement of the ingests beside it instead.
    public func apply(_ changes: [StoreChange]) async throws -> [ChangeOutcome] {
        guard !changes.isEmpty else { return [] }
        if let work = try loneWork(changes) { return [try await doWork(work)] }
        // An ingest with deadlines is rare (an app's rule, a VoIP push): it takes the transaction's path.
        if changes.count == 1, case .accept(let ingest) = changes[0], ingest.deadlines.isEmpty {
            return [try await acceptBatched(ingest)]
        }
        let (outcomes, after) = try await transaction("apply \(changes.count) change(s)") {
            [logger] connection -> ([ChangeOutcome], AfterCommit) in
            var after = AfterCommit()
            var outcomes: [ChangeOutcome] = []
            outcomes.reserveCapacity(changes.count)
            for change in changes {
                outcomes.append(try await Self.apply(change, on: connection, logger: logger, after: &after))
            }
            return (outcomes, after)
        }
        await announce(after)
        return outcomes
    }

    /// One change, inside the caller's transaction.
    private static func apply(
        _ change: StoreChange,
        on connection: PostgresConnection,
        logger: Logger,
        after: inout AfterCommit
    ) async throws -> ChangeOutcome {
        switch change {
        case .saveApp(let app):
            try await saveApp(app, on: connection, logger: logger)
        case .saveDevice(let device):
            try await saveDevice(device, on: connection, logger: logger)
        case .updateTokens(let update):
            return try await updateTokens(update, on: connection, logger: logger)
        case .deleteDevice(let id):
            return try await deleteDevice(id: id, on: connection, logger: logger)
        case .savePresence(let presence):
            try await savePresence(presence, on: connection, logger: logger)
        case .setNotificationPermission(let report):
            return try await setNotificationPermission(report, on: connection, logger: logger)
        case .enqueueWebhookEvents(let events):
            try await insert(events, on: connection, logger: logger)
        case .insertAPIKey(let key, let audit):
            let outcome = try await insertAPIKey(key, on: connection, logger: logger)
            return try await audited(outcome, audit, on: connection, logger: logger)
        case .revokeAPIKey(let id, let at, let audit):
            let outcome = try await revokeAPIKey(id: id, at: at, on: connection, logger: logger)
            return try await audited(outcome, audit, on: connection, logger: logger)
        case .appendAudit(let entry):
            try await appendAudit(entry, on: connection, logger: logger)
        case .accept(let ingest):
            return try await accept(ingest, on: connection, logger: logger, after: &after)
        case .acceptCall(let ingest, let call):
            return try await acceptCall(ingest, call: call, on: connection, logger: logger, after: &after)
        case .hold(let ingest, let until, let appID):
            return try await hold(ingest, until: until, appID: appID, on: connection, logger: logger)
        case .endCall(let end):
            return try await endCall(end, on: connection, logger: logger, after: &after)
        case .reportCallRinging(let ringing):
            return try await reportRinging(ringing, on: connection, logger: logger)
        case .recordReceipt(let receipt, let events):
            return try await record(receipt, events: events, on: connection, logger: logger)
        case .scheduleCallback(let record, let history, let key):
            return try await schedule(record, history: history, idempotencyKey: key, on: connection, logger: logger)
        case .changeCallback(let change):
            return try await Self.change(change, on: connection, logger: logger, after: &after)
        case .saveDisconnect(let disconnect, let events):
            try await saveDisconnect(disconnect, events: events, on: connection, logger: logger)
        case .markDisconnectPushed(let deviceID, let conversation):
            return try await markDisconnectPushed(deviceID, conversation, on: connection, logger: logger)
        case .endChat(let conversation, let at):
            return try await endChat(conversation: conversation, at: at, on: connection, logger: logger)
        case .saveLiveSession(let session):
            try await saveLiveSession(session, on: connection, logger: logger)
        case .removeLiveSession(let deviceID, let sessionID):
            return try await removeLiveSession(deviceID: deviceID, sessionID: sessionID, on: connection, logger: logger)
        case .sealSenders:
            // Nothing was ever clear here; a sealed sender is never replaced.
            break
        case .releaseHeld(let release, let now):
            return try await Self.release(release, now: now, on: connection, logger: logger, after: &after)
        case .settleLiveHandover(let messageID, let deviceID):
            return try await settleLiveHandover(messageID, deviceID, on: connection, logger: logger)
        case .renewLiveSessions(let nodeID, let sessionIDs, let until):
            try await renewLiveSessions(nodeID, sessionIDs, until, on: connection, logger: logger)
        case .completeWebhookEvent(let id, let owner, let completion, let now):
            return try await completeWebhookEvent(id, owner, completion, now, on: connection, logger: logger)
        case .removeDisconnect(let disconnect, let events):
            return try await removeDisconnect(disconnect, events: events, on: connection, logger: logger)
        case .armDeadlines(let deadlines):
            try await insert(deadlines, on: connection, logger: logger)
        case .cancelDeadlines(let pushIDs):
            try await cancelDeadlines(pushIDs, on: connection, logger: logger)
        case .settleDeadline(let deadline, let owner, let then):
            guard try await settle(deadline, owner: owner, on: connection, logger: logger) else { return .stale }
            for change in then { _ = try await apply(change, on: connection, logger: logger, after: &after) }
        case .countUnreportedCall(let deviceID, let at):
            try await countUnreportedCall(deviceID: deviceID, at: at, on: connection, logger: logger)
        case .saveOperator(let account, let audit):
            try await saveOperator(account, on: connection, logger: logger)
            return try await audited(.applied, audit, on: connection, logger: logger)
        case .deleteOperator(let name, let audit):
            let outcome = try await deleteOperator(name: name, on: connection, logger: logger)
            return try await audited(outcome, audit, on: connection, logger: logger)
        case .saveConsoleSession(let session):
            return try await saveConsoleSession(session, on: connection, logger: logger)
        case .deleteConsoleSession(let id):
            return try await deleteConsoleSession(id: id, on: connection, logger: logger)
        case .deleteExpiredConsoleSessions(let before):
            try await deleteExpiredConsoleSessions(before: before, on: connection, logger: logger)
        case .work:
            // `loneWork` let none through in a batch.
            throw StoreError.invalid.with(detail: "store work is applied in a batch of its own")
        }
        return .applied
    }

    /// A change's outcome, with the audit entry that records it written only when it was applied.
    private static func audited(
        _ outcome: ChangeOutcome,
        _ entry: AuditEntry?,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        if outcome == .applied, let entry { try await appendAudit(entry, on: connection, logger: logger) }
        return outcome
    }

    /// Tells the other nodes what a committed batch gave them (pushes queued, live handovers,
    /// call stops) and forgets the recipients found stale.
    func announce(_ after: AfterCommit) async {
        if after.queued { announceQueued() }
        if !after.handovers.isEmpty { await announceHandovers(after.handovers) }
        if !after.stopNodes.isEmpty { await announceStops(to: after.stopNodes) }
        for user in after.staleUsers { recipientCache.withLock { $0.forget(userID: user) } }
    }
}

/// What a transaction's changes leave to do once it committed: wake-ups go out only for what is
/// there to be read.
struct AfterCommit: Sendable {
    /// Pushes were written queued, for any node's dispatcher.
    var queued = false
    /// Live handovers written, to wake the nodes holding the channels.
    var handovers: [LiveHandover] = []
    /// Nodes handed call stops.
    var stopNodes: Set<String> = []
    /// Users whose recipients version an ingest found stale: what this node kept of them is
    /// behind, so their next ingest reads again.
    var staleUsers: Set<String> = []

    /// What an ingest's outcome leaves to do.
    mutating func note(_ ingest: Ingest, _ outcome: ChangeOutcome) {
        switch outcome {
        case .applied:
            // Pushes the accepting node keeps (`Ingest.claim`) wake nobody else: it sends them.
            if ingest.queuesPushes { queued = true }
            handovers += ingest.handovers
        case .stale:
            if let user = ingest.recipientsVersion?.userID { staleUsers.insert(user) }
        case .duplicate, .answered:
            break
        }
    }
}

extension Ingest {
    /// An ingest with nothing to write (no message, push, handover or key) is accepted without a
    /// statement.
    var writesNothing: Bool { message == nil && pushes.isEmpty && handovers.isEmpty && idempotencyKey == nil }
}
