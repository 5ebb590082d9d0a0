public import HeraldPush

// The store's work in the words its callers use, each one `StoreWork` applied alone and its
// answer read back.

extension WorkAnswer {
    /// The rows of a `pushes` answer.
    public var pushes: [ClaimedPush]? { if case .pushes(let rows) = self { rows } else { nil } }
    /// The rows of a `calls` answer.
    public var calls: [CallRecord]? { if case .calls(let rows) = self { rows } else { nil } }
    /// The rows of a `callStops` answer.
    public var callStops: [CallStop]? { if case .callStops(let rows) = self { rows } else { nil } }
    /// The rows of a `callbacks` answer.
    public var callbacks: [CallbackRecord]? { if case .callbacks(let rows) = self { rows } else { nil } }
    /// The rows of a `deadlines` answer.
    public var deadlines: [PushDeadline]? { if case .deadlines(let rows) = self { rows } else { nil } }
    /// The rows of a `liveHandovers` answer.
    public var liveHandovers: [LiveHandover]? { if case .liveHandovers(let rows) = self { rows } else { nil } }
    /// The rows of a `webhookEvents` answer.
    public var webhookEvents: [StoredWebhookEvent]? { if case .webhookEvents(let rows) = self { rows } else { nil } }
    /// The swap of a `providerToken` answer.
    public var providerToken: ProviderTokenSwap? { if case .providerToken(let swap) = self { swap } else { nil } }
    /// The number of a `count` answer.
    public var count: Int? { if case .count(let count) = self { count } else { nil } }
    /// The position of a `position` answer.
    public var position: Int? { if case .position(let position) = self { position } else { nil } }
}

extension OutboxStore {
    /// Claims due pushes through `networks` (see `StoreWork.claimPushes`).
    public func claim(
        limit: Int,
        owner: String,
        now: Int64,
        leaseUntil: Int64,
        networks: Set<PushNetwork> = Set(PushNetwork.allCases)
    ) async throws -> [ClaimedPush] {
        let lease = StoreWork.Lease(owner: owner, now: now, until: leaseUntil, limit: limit)
        return try await perform(.claimPushes(lease, networks: networks), \.pushes)
    }

    /// Records what the dispatcher learned at `now` (see `StoreWork.completePushes`).
    public func complete(_ completions: [PushCompletion], now: Int64) async throws {
        try await complete([CompletionBatch(completions: completions, now: now)])
    }

    /// Records several batches of outcomes, each at its own time, in one write where the engine
    /// can (see `StoreWork.completePushes`).
    public func complete(_ batches: [CompletionBatch]) async throws {
        try await apply(.work(.completePushes(batches)))
    }

    /// Puts back every push `owner` had claimed, due at once; returns how many.
    public func releaseClaims(owner: String, now: Int64) async throws -> Int {
        try await perform(.releaseClaims(owner: owner, now: now), \.count)
    }
}

extension CallStore {
    /// Claims up to `limit` ringing calls past their time to live (see `StoreWork.claimDueCalls`).
    public func claimDueCalls(now: Int64, owner: String, leaseUntil: Int64, limit: Int) async throws -> [CallRecord] {
        let lease = StoreWork.Lease(owner: owner, now: now, until: leaseUntil, limit: limit)
        return try await perform(.claimDueCalls(lease), \.calls)
    }

    /// Removes and returns the stops handed to `nodeID`; each is returned once.
    public func takeCallStops(nodeID: String) async throws -> [CallStop] {
        try await perform(.takeCallStops(nodeID: nodeID), \.callStops)
    }
}

extension CallbackStore {
    /// Claims up to `limit` callbacks that need the relay now (see `StoreWork.claimDueCallbacks`).
    public func claimDueCallbacks(
        limit: Int,
        owner: String,
        now: Int64,
        leaseUntil: Int64
    ) async throws -> [CallbackRecord] {
        let lease = StoreWork.Lease(owner: owner, now: now, until: leaseUntil, limit: limit)
        return try await perform(.claimDueCallbacks(lease), \.callbacks)
    }

    /// Deletes the finished callbacks last changed before `before`; returns how many.
    public func deleteFinishedCallbacks(before: Int64) async throws -> Int {
        try await perform(.deleteFinishedCallbacks(before: before), \.count)
    }
}

extension OutboxStore {
    /// Claims up to `limit` push deadlines due at `now` (see `StoreWork.claimDueDeadlines`).
    public func claimDueDeadlines(
        limit: Int,
        owner: String,
        now: Int64,
        leaseUntil: Int64
    ) async throws
        -> [PushDeadline]
    {
        let lease = StoreWork.Lease(owner: owner, now: now, until: leaseUntil, limit: limit)
        return try await perform(.claimDueDeadlines(lease), \.deadlines)
    }
}

extension HeldMessageStore {
    /// Ends the holds that ended at or before `now`; returns how many ended.
    public func endHolds(now: Int64) async throws -> Int {
        try await perform(.endHolds(now: now), \.count)
    }
}

extension LiveSessionStore {
    /// The handovers for `nodeID` it has not taken yet (see `StoreWork.takeLiveHandovers`).
    public func takeLiveHandovers(nodeID: String) async throws -> [LiveHandover] {
        try await perform(.takeLiveHandovers(nodeID: nodeID), \.liveHandovers)
    }

    /// Removes and returns up to `limit` overdue handovers (see
    /// `StoreWork.takeOverdueLiveHandovers`).
    public func takeOverdueLiveHandovers(now: Int64, limit: Int) async throws -> [LiveHandover] {
        try await perform(.takeOverdueLiveHandovers(now: now, limit: limit), \.liveHandovers)
    }
}

extension ProviderTokenStore {
    /// Stores a new token for a key if the stored one is still the one the caller saw (see
    /// `StoreWork.replaceProviderToken`).
    public func replaceProviderToken(
        teamID: String,
        keyID: String,
        sealedToken: [UInt8],
        issuedAt: Int64,
        replacing version: Int64?
    ) async throws -> ProviderTokenSwap {
        let replacement = ProviderTokenReplacement(
            teamID: teamID,
            keyID: keyID,
            sealedToken: sealedToken,
            issuedAt: issuedAt,
            replacing: version
        )
        return try await perform(.replaceProviderToken(replacement), \.providerToken)
    }
}

extension ChangeStore {
    /// Deletes what retention ended (see `StoreWork.deleteExpired`); returns how many messages
    /// and pushes went.
    public func deleteExpired(now: Int64, historyBefore: Int64) async throws -> (messages: Int, pushes: Int) {
        try await perform(.deleteExpired(now: now, historyBefore: historyBefore)) { answer in
            if case .expired(let messages, let pushes) = answer { (messages, pushes) } else { nil }
        }
    }

    /// Deletes the chats that ended before `endedBefore` (see `StoreWork.deleteEndedChats`);
    /// returns how many went.
    public func deleteEndedChats(endedBefore: Int64) async throws -> Int {
        try await perform(.deleteEndedChats(endedBefore: endedBefore), \.count)
    }
}

extension TranscriptStore {
    /// Appends an event at the conversation's next position; returns the position.
    public func appendTranscript(_ event: TranscriptEvent) async throws -> Int {
        try await perform(.appendTranscript(event), \.position)
    }

    /// Ends every open chat idle since `now - idle`; returns how many ended.
    public func endIdleChats(now: Int64, idle: Int64) async throws -> Int {
        try await perform(.endIdleChats(now: now, idle: idle), \.count)
    }

    /// Removes a device's disconnect and returns it, if it had one, with the webhook events
    /// `events` makes of it in the same transaction. The disconnect is read, its events planned,
    /// and it is removed only if it is still the one read: a disconnect written in between is
    /// read again.
    public func removeDisconnect(
        deviceID: String,
        conversation: String,
        events: (ChatDisconnect) -> [WebhookEvent] = { _ in [] }
    ) async throws -> ChatDisconnect? {
        while true {
            let found = try await disconnects(conversation: conversation).first { $0.deviceID == deviceID }
            guard let found else { return nil }
            if try await apply(.removeDisconnect(found, events: events(found))) == .applied { return found }
        }
    }
}

extension WebhookQueueStore {
    /// Takes up to `lease.limit` due webhook events for the lease's owner (see
    /// `StoreWork.claimWebhookEvents`).
    public func claimWebhookEvents(_ lease: StoreWork.Lease) async throws -> [StoredWebhookEvent] {
        try await perform(.claimWebhookEvents(lease), \.webhookEvents)
    }

    /// Deletes delivered and failed events last changed before `before`; returns how many went.
    public func deleteFinishedWebhookEvents(before: Int64) async throws -> Int {
        try await perform(.deleteFinishedWebhookEvents(before: before), \.count)
    }
}
