import HeraldMacros
public import HeraldPush

/// The store's own work on its queues and tables: claims and takes that answer with the rows they
/// took, completions, sweeps that answer how many rows went, a transcript's next position and the
/// provider token's compare-and-set. Like every write it goes through `ChangeStore.apply`, as
/// `StoreChange.work`, and answers `ChangeOutcome.answered`.
///
/// Each is atomic on its own, and most are one statement on purpose: nodes claiming side by side
/// skip each other's rows instead of waiting on a transaction's locks. So a `work` change is
/// applied in a batch of its own; a batch that mixes one with other changes is refused
/// (`StoreError.invalid`) and writes nothing.
public enum StoreWork: Sendable, Hashable {
    /// Claims up to `limit` due pushes (queued, next attempt at or before `now`, or claimed under
    /// a lease that ended before `now`) for `owner`, held through `leaseUntil`: calls before
    /// messages, then the longest waiting first (since `queuedSince`: the customer's wait where
    /// the push has one, its acceptance otherwise), returned in that order, each `sending` with
    /// one more attempt and the device's current token for its kind (VoIP pushes to the PushKit
    /// token, the others to the messaging token). Pushes past their expiration are finished
    /// `expired` (`expired before sending`), pushes whose device is gone or has no token for them
    /// `skipped` (`device_deactivated`, `no_token`, `token_dead: <reason>`), instead of returned,
    /// and count no attempt. Only pushes through one of `networks` are claimed (the dispatcher
    /// leaves a network's pushes queued while the network is unreachable); the others are neither
    /// returned nor finished, whatever their state. No networks: nothing is claimed. Answers
    /// `pushes`.
    case claimPushes(Lease, networks: Set<PushNetwork>)
    /// Records what the dispatcher learned, each batch at its own time: a final state, back to
    /// the queue at a given time (logged with its reason), or back to the queue as if its claim
    /// had not happened (`requeue`: the attempt the claim counted is taken back; logged with its
    /// reason). A dead token is cleared from its device only if the device still has that token
    /// (a newer one is kept), and the device remembers why. In one write where the engine can
    /// (the dispatcher gathers its loops' finished batches). Answers `applied`.
    case completePushes([CompletionBatch])
    /// Puts back every push `owner` had claimed (after a restart of that owner), due at once.
    /// Answers `count`.
    case releaseClaims(owner: String, now: Int64)
    /// Claims ringing calls whose time to live passed at `lease.now` and which no other owner
    /// holds under a lease still running; each is returned to one claimer at a time, across
    /// stores on the same data. The claimer ends it (`missed`) with `endCall`; a claimer that
    /// dies leaves it to the next claim after its lease. Answers `calls`.
    case claimDueCalls(Lease)
    /// Removes and returns the stops handed to `nodeID`; each is returned once. Answers
    /// `callStops`.
    case takeCallStops(nodeID: String)
    /// Claims, in one statement, callbacks that need the relay now: scheduled and due or past
    /// their expiration, or pushed and past their expiration; not under another owner's live
    /// lease (a claim `owner` itself left, by an earlier run that stopped between claim and
    /// change, is taken back at once: one owner claims from one loop). Each is returned with its
    /// version moved and held by the owner through the lease, soonest due first. Answers
    /// `callbacks`.
    case claimDueCallbacks(Lease)
    /// Deletes the finished callbacks (connected, cancelled, expired) last changed before
    /// `before`, with their history. Their webhook events are the webhook queue's to keep or
    /// delete. Answers `count`.
    case deleteFinishedCallbacks(before: Int64)
    /// Claims, in one statement, push deadlines due at `lease.now` that no other owner holds
    /// under a lease still running (a claim `owner` itself left is taken back at once), held by
    /// the owner through the lease, soonest first. The claimer settles each with
    /// `StoreChange.settleDeadline`; one that dies leaves it to the next claim after its lease.
    /// Answers `deadlines`.
    case claimDueDeadlines(Lease)
    /// Ends the holds that ended at or before `now` (their messages stay until retention removes
    /// them). Answers `count`.
    case endHolds(now: Int64)
    /// The handovers for `nodeID` it has not taken yet, oldest deadline first; each is returned
    /// once (across concurrent calls too) and stays pending until settled or overdue. Answers
    /// `liveHandovers`.
    case takeLiveHandovers(nodeID: String)
    /// Removes and returns up to `limit` handovers whose deadline is at or before `now`, taken or
    /// not: each is returned once, across concurrent calls and stores. Answers `liveHandovers`.
    case takeOverdueLiveHandovers(now: Int64, limit: Int)
    /// Stores a new token for a key if the stored one is still the one the caller saw. Answers
    /// `providerToken`: `.replaced` with the stored record (version `version + 1`, or 1) when the
    /// stored token was still `version`; otherwise `.lost` with the token stored now.
    case replaceProviderToken(ProviderTokenReplacement)
    /// Deletes messages whose retention ended at or before `now`, and what is older than
    /// `historyBefore`: idempotency keys first used then (the key may be used again), and
    /// finished pushes last changed then, with their payload and history. Queued and claimed
    /// pushes stay, however old. Live sessions whose lease ended at or before `now` go too:
    /// readers ignore them already, and a node that died leaves its sessions behind. Answers
    /// `expired`.
    case deleteExpired(now: Int64, historyBefore: Int64)
    /// Deletes the chats that ended before `endedBefore`, with their transcripts and
    /// disconnects, and the disconnects recorded before `endedBefore` in conversations with no
    /// chat (no event was ever added, or the chat is gone). Open chats stay, however old.
    /// Answers `count` (chats).
    case deleteEndedChats(endedBefore: Int64)
    /// Appends an event at the conversation's next position (1, 2, 3 … per conversation, none
    /// given twice, even to concurrent appends). The first event starts the chat (with the
    /// event's user and time), every event moves its last event time. An event for an ended chat
    /// is refused with `StoreError.conflict` and nothing is written. Answers `position`.
    case appendTranscript(TranscriptEvent)
    /// Ends every open chat whose last event is at or before `now - idle`, each at its last event
    /// plus `idle` (when it became idle, whenever this runs). Answers `count`.
    case endIdleChats(now: Int64, idle: Int64)
    /// Takes up to `lease.limit` webhook events that are due: pending with `nextAttemptAt <=
    /// now`, or sending under a lease that ended at or before `now` (its sender is gone), each
    /// the first undelivered event of its ordering key. They become `sending`, owned by the
    /// lease's owner until its end, one attempt more. One statement: two claimers never take the
    /// same event. Answers `webhookEvents`.
    case claimWebhookEvents(Lease)
    /// Deletes delivered and failed webhook events last changed before `before`. Undelivered
    /// events stay, however old. Answers `count`.
    case deleteFinishedWebhookEvents(before: Int64)

    /// Who claims, when, for how long and how many: what every claim names.
    @MemberwiseInit
    public struct Lease: Sendable, Hashable {
        public var owner: String
        /// The claim's time (milliseconds since the epoch): what is due at or before it is taken.
        public var now: Int64
        /// When the claim lapses if its owner never finishes it.
        public var until: Int64
        /// At most this many rows.
        public var limit: Int
    }
}

/// A provider token to store in place of the version the caller saw (`nil`: it saw none).
@MemberwiseInit
public struct ProviderTokenReplacement: Sendable, Hashable {
    public var teamID: String
    public var keyID: String
    /// The token as the caller sealed it; stored and returned as given.
    public var sealedToken: [UInt8]
    /// When the token was signed, in milliseconds since the epoch.
    public var issuedAt: Int64
    public var replacing: Int64?
}

/// What a `StoreWork` answered: the rows it took, or how many it changed.
public enum WorkAnswer: Sendable, Hashable {
    case pushes([ClaimedPush])
    case calls([CallRecord])
    case callStops([CallStop])
    case callbacks([CallbackRecord])
    case deadlines([PushDeadline])
    case liveHandovers([LiveHandover])
    case webhookEvents([StoredWebhookEvent])
    case providerToken(ProviderTokenSwap)
    /// How many rows the work changed or removed (for `deleteExpired`, the messages).
    case count(Int)
    /// `deleteExpired`'s messages and pushes.
    case expired(messages: Int, pushes: Int)
    /// The transcript position an append took.
    case position(Int)
}

extension StoreChange {
    /// Whether the change is store work, which is applied in a batch of its own.
    public var isWork: Bool {
        if case .work = self { true } else { false }
    }
}

extension ChangeStore {
    /// Does one piece of store work and answers what it took; an answer of another kind than
    /// `expected` reads its rows (an engine that answers wrongly is `StoreError.corrupt`).
    public func perform<Rows>(
        _ work: StoreWork,
        _ expected: (WorkAnswer) -> Rows?
    ) async throws -> Rows {
        let outcome = try await apply(.work(work))
        guard case .answered(let answer) = outcome, let rows = expected(answer) else {
            throw StoreError.corrupt.with(detail: "the store answered \(outcome) to store work")
        }
        return rows
    }

    /// Refuses a batch that mixes store work with other changes (see `StoreWork`); answers the
    /// work when the batch is one piece of it.
    public func loneWork(_ changes: [StoreChange]) throws -> StoreWork? {
        guard changes.contains(where: \.isWork) else { return nil }
        guard changes.count == 1, case .work(let work) = changes[0] else {
            throw StoreError.invalid.with(detail: "store work is applied in a batch of its own")
        }
        return work
    }
}
