public import HeraldStore

extension SQLiteStore {
    /// One piece of store work, each in a write of its own (atomic on its own: see `StoreWork`).
    func doWork(_ work: StoreWork) async throws -> ChangeOutcome {
        let answer: WorkAnswer
        switch work {
        case .claimPushes(let lease, let networks):
            answer = .pushes(
                try await claim(
                    limit: lease.limit,
                    owner: lease.owner,
                    now: lease.now,
                    leaseUntil: lease.until,
                    networks: networks
                )
            )
        case .completePushes(let batches):
            try await complete(batches)
            return .applied
        case .releaseClaims(let owner, let now):
            answer = .count(try await releaseClaims(owner: owner, now: now))
        case .claimDueCalls(let lease):
            answer = .calls(
                try await claimDueCalls(now: lease.now, owner: lease.owner, leaseUntil: lease.until, limit: lease.limit)
            )
        case .takeCallStops(let nodeID):
            answer = .callStops(try await takeCallStops(nodeID: nodeID))
        case .claimDueCallbacks(let lease):
            answer = .callbacks(
                try await claimDueCallbacks(limit: lease.limit, owner: lease.owner, now: lease.now, leaseUntil: lease.until)
            )
        case .deleteFinishedCallbacks(let before):
            answer = .count(try await deleteFinishedCallbacks(before: before))
        case .endHolds(let now):
            answer = .count(try await endHolds(now: now))
        case .takeLiveHandovers(let nodeID):
            answer = .liveHandovers(try await takeLiveHandovers(nodeID: nodeID))
        case .takeOverdueLiveHandovers(let now, let limit):
            answer = .liveHandovers(try await takeOverdueLiveHandovers(now: now, limit: limit))
        case .replaceProviderToken(let replacement):
            answer = .providerToken(try await replaceProviderToken(replacement))
        case .deleteExpired(let now, let historyBefore):
            let (messages, pushes) = try await deleteExpired(now: now, historyBefore: historyBefore)
            answer = .expired(messages: messages, pushes: pushes)
        case .deleteEndedChats(let endedBefore):
            answer = .count(try await deleteEndedChats(endedBefore: endedBefore))
        case .appendTranscript(let event):
            answer = .position(try await appendTranscript(event))
        case .endIdleChats(let now, let idle):
            answer = .count(try await endIdleChats(now: now, idle: idle))
        case .claimWebhookEvents(let lease):
            answer = .webhookEvents(
                try await claimWebhookEvents(limit: lease.limit, owner: lease.owner, now: lease.now, leaseUntil: lease.until)
            )
        case .deleteFinishedWebhookEvents(let before):
            answer = .count(try await deleteFinishedWebhookEvents(before: before))
        }
        return .answered(answer)
    }
}
