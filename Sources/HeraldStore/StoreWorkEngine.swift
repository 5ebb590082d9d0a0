public import HeraldPush

/// What an engine does for each piece of store work (`StoreWork`), one function per case, named
/// apart from the callers' words so that none is mistaken for them. The relay never calls these:
/// it asks `ChangeStore.apply`, and the engine's `apply` hands a lone piece of work to
/// `doWork(_:)`, which maps it to its function here and its answer to a `WorkAnswer` in one place
/// for every engine.
///
/// Each function's promise is its `StoreWork` case's. Package-wide, not public: the store's
/// public write is `apply` alone.
package protocol StoreWorkEngine: Sendable {
    func claimPushes(_ lease: StoreWork.Lease, networks: Set<PushNetwork>) async throws -> [ClaimedPush]
    func complete(batches: [CompletionBatch]) async throws
    func releaseClaims(of owner: String, now: Int64) async throws -> Int
    func claimDueCalls(_ lease: StoreWork.Lease) async throws -> [CallRecord]
    func takeCallStops(for nodeID: String) async throws -> [CallStop]
    func claimDueCallbacks(_ lease: StoreWork.Lease) async throws -> [CallbackRecord]
    func deleteFinishedCallbacks(changedBefore before: Int64) async throws -> Int
    func claimDueDeadlines(_ lease: StoreWork.Lease) async throws -> [PushDeadline]
    func endHolds(at now: Int64) async throws -> Int
    func takeLiveHandovers(for nodeID: String) async throws -> [LiveHandover]
    func takeOverdueLiveHandovers(at now: Int64, limit: Int) async throws -> [LiveHandover]
    func replaceProviderToken(_ replacement: ProviderTokenReplacement) async throws -> ProviderTokenSwap
    func deleteExpired(at now: Int64, historyBefore: Int64) async throws -> (messages: Int, pushes: Int)
    func deleteEndedChats(before endedBefore: Int64) async throws -> Int
    func appendTranscript(event: TranscriptEvent) async throws -> Int
    func endIdleChats(at now: Int64, idle: Int64) async throws -> Int
    func claimWebhookEvents(under lease: StoreWork.Lease) async throws -> [StoredWebhookEvent]
    func deleteFinishedWebhookEvents(changedBefore before: Int64) async throws -> Int
}

extension StoreWorkEngine {
    /// Does one piece of store work and answers what it took (`ChangeOutcome.answered`), or
    /// `applied` for completions.
    package func doWork(_ work: StoreWork) async throws -> ChangeOutcome {
        switch work {
        case .claimPushes(let lease, let networks):
            return .answered(.pushes(try await claimPushes(lease, networks: networks)))
        case .completePushes(let batches):
            try await complete(batches: batches)
            return .applied
        case .releaseClaims(let owner, let now):
            return .answered(.count(try await releaseClaims(of: owner, now: now)))
        case .claimDueCalls(let lease):
            return .answered(.calls(try await claimDueCalls(lease)))
        case .takeCallStops(let nodeID):
            return .answered(.callStops(try await takeCallStops(for: nodeID)))
        case .claimDueCallbacks(let lease):
            return .answered(.callbacks(try await claimDueCallbacks(lease)))
        case .deleteFinishedCallbacks(let before):
            return .answered(.count(try await deleteFinishedCallbacks(changedBefore: before)))
        case .claimDueDeadlines(let lease):
            return .answered(.deadlines(try await claimDueDeadlines(lease)))
        case .endHolds(let now):
            return .answered(.count(try await endHolds(at: now)))
        case .takeLiveHandovers(let nodeID):
            return .answered(.liveHandovers(try await takeLiveHandovers(for: nodeID)))
        case .takeOverdueLiveHandovers(let now, let limit):
            return .answered(.liveHandovers(try await takeOverdueLiveHandovers(at: now, limit: limit)))
        case .replaceProviderToken(let replacement):
            return .answered(.providerToken(try await replaceProviderToken(replacement)))
        case .deleteExpired(let now, let historyBefore):
            let (messages, pushes) = try await deleteExpired(at: now, historyBefore: historyBefore)
            return .answered(.expired(messages: messages, pushes: pushes))
        case .deleteEndedChats(let endedBefore):
            return .answered(.count(try await deleteEndedChats(before: endedBefore)))
        case .appendTranscript(let event):
            return .answered(.position(try await appendTranscript(event: event)))
        case .endIdleChats(let now, let idle):
            return .answered(.count(try await endIdleChats(at: now, idle: idle)))
        case .claimWebhookEvents(let lease):
            return .answered(.webhookEvents(try await claimWebhookEvents(under: lease)))
        case .deleteFinishedWebhookEvents(let before):
            return .answered(.count(try await deleteFinishedWebhookEvents(changedBefore: before)))
        }
    }
}
