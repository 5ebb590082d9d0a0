import HeraldStore

/// Decides, for one APNs key on one node, when to adopt the cluster's provider token, when to
/// sign one and publish it, and when to sign one for this node alone. No I/O: events in (what
/// the store holds, or that it failed), actions out (`SharedProviderToken` does them and tells
/// the machine how they went).
///
/// Times are milliseconds since the epoch, on the caller's wall clock: a token's age is judged
/// from its `iat`, which every node reads alike.
struct SharedTokenMachine: Sendable {
    struct Timing: Sendable, Hashable {
        /// The age at which the stored token is replaced: 50 minutes, inside Apple's 20–60.
        var refreshAfter: Int64 = 50 * 60 * 1000
        /// The age past which a node that cannot reach the store signs a token of its own rather
        /// than keep one APNs will soon refuse as expired (Apple's limit is 60 minutes).
        var localFallbackAfter: Int64 = 55 * 60 * 1000
    }

    /// The token this node sends with.
    enum Held: Sendable, Hashable {
        case none
        /// The store's token of this version.
        case adopted(version: Int64, issuedAt: Int64)
        /// One this node signed while the store could not be reached: not the cluster's yet.
        case local(issuedAt: Int64)
    }

    enum Event: Sendable, Hashable {
        /// Time to look at the store: periodically, at start, and when APNs refused the token.
        case look
        /// What the store holds now (after a read, or after a compare-and-set, won or lost).
        case stored(ProviderTokenRecord?, now: Int64)
        /// The stored token does not open with this node's key (sealed with another .p8 under the
        /// same key id, or damaged): it is of no use to anyone holding this key.
        case unopenable(ProviderTokenRecord, now: Int64)
        /// The store did not answer.
        case storeFailed(now: Int64)
        /// The stored token was opened and is what this node sends with now.
        case adopted(ProviderTokenRecord)
        /// This node signed a token for itself (the store did not answer).
        case signedLocally(issuedAt: Int64)
    }

    enum Action: Sendable, Hashable {
        case none
        case read
        /// Open the record's token and send with it.
        case adopt(ProviderTokenRecord)
        /// Sign a new token and store it if the stored one is still version `replacing`.
        case publishNew(replacing: Int64?)
        /// Store the token held (signed while the store was away) if the stored one is still
        /// version `replacing`: publishing it, rather than a new one, keeps APNs at one change.
        case publishHeld(replacing: Int64?)
        /// Sign a token and send with it, without the store.
        case signLocally
    }

    let timing: Timing
    private(set) var held: Held = .none

    init(timing: Timing = Timing()) {
        self.timing = timing
    }

    mutating func handle(_ event: Event) -> Action {
        switch event {
        case .look:
            return .read
        case .stored(nil, let now):
            return heldIsYoung(now) ? .publishHeld(replacing: nil) : .publishNew(replacing: nil)
        case .stored(let record?, let now):
            if now - record.issuedAt >= timing.refreshAfter {
                // Due: whoever wins the compare-and-set replaces it; the others adopt the winner's.
                if case .local = held, heldIsYoung(now) { return .publishHeld(replacing: record.version) }
                return .publishNew(replacing: record.version)
            }
            if case .adopted(let version, _) = held, version == record.version { return .none }
            return .adopt(record)
        case .unopenable(let record, let now):
            return heldIsYoung(now) ? .publishHeld(replacing: record.version) : .publishNew(replacing: record.version)
        case .storeFailed(let now):
            switch held {
            case .none:
                return .signLocally
            case .adopted(_, let issuedAt), .local(let issuedAt):
                // Keep sending with the token held while it is good; the store may be back soon.
                return now - issuedAt >= timing.localFallbackAfter ? .signLocally : .none
            }
        case .adopted(let record):
            held = .adopted(version: record.version, issuedAt: record.issuedAt)
            return .none
        case .signedLocally(let issuedAt):
            held = .local(issuedAt: issuedAt)
            return .none
        }
    }

    /// Whether a token is held and younger than `refreshAfter`.
    private func heldIsYoung(_ now: Int64) -> Bool {
        switch held {
        case .none: false
        case .adopted(_, let issuedAt), .local(let issuedAt): now - issuedAt < timing.refreshAfter
        }
    }
}
