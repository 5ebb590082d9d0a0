import HeraldMacros
public import HeraldPush

/// One accepted push, as the outbox keeps it.
@MemberwiseInit
public struct OutboxEntry: Sendable, Hashable {
    public var pushID: String
    public var deviceID: String
    public var kind: OutboxKind
    /// The message id or the call id; for a callback's push, the callback id and the push
    /// number (`CallbackPushSubject`).
    public var subjectID: String
    /// The queue's order: 10 for calls, 5 for messages; the dispatcher takes higher first.
    public var priority: Int
    /// What the push network receives (its network, topic, type and body), all but the device
    /// token, which is read when the push is claimed.
    public var payload: Push.Payload
    public var collapseID: String?
    public var attempts: Int = 0
    /// Milliseconds since the epoch.
    public var nextAttemptAt: Int64
    /// Milliseconds since the epoch; the push is not sent after this.
    public var expiresAt: Int64
    public var state: PushState = .queued
    public var lastReason: String?
    public var createdAt: Int64
    public var updatedAt: Int64
    /// When the customer began waiting for what this push brings (milliseconds since the epoch,
    /// at or before `createdAt`): the queue orders the push by it instead of by `createdAt`
    /// (calls still first). Set by the relay only for apps whose queue order is the customer's
    /// wait; nil: time in the queue (docs/relay.md, "Queue order").
    public var waitingSince: Int64?
    /// "Now or never": the push network gets `expiration` 0 (APNs `apns-expiration: 0`, FCM
    /// `ttl: "0s"`) and the push has one attempt; `expiresAt` is only the relay's window to make
    /// it.
    public var nowOrNever: Bool = false
    /// The W3C `traceparent` of the request that made the push (its ingest span), kept so its
    /// claim, attempts, receipts and webhook events join that trace on any node; written only
    /// while tracing is on (docs/tracing.md).
    public var traceParent: String?
}

extension OutboxEntry {
    /// Where the push stands in the queue among pushes of its priority: earlier goes first.
    public var queuedSince: Int64 { waitingSince ?? createdAt }

    /// The network the push goes through.
    public var network: PushNetwork { payload.network }

    /// The push's `apns-id`; an FCM push has none, and answers its push id.
    public var apnsID: String {
        if case .apns(let apns) = payload { return apns.apnsID }
        return pushID
    }

    /// Whether the push goes to the device's PushKit token rather than its messaging token.
    public var usesVoIPToken: Bool {
        if case .apns(let apns) = payload { return apns.type == .voip }
        return false
    }
}

/// One line of a push's history.
@MemberwiseInit
public struct DeliveryEvent: Sendable, Hashable {
    public var pushID: String
    public var at: Int64
    public var state: PushState
    public var reason: String?
}

/// A claimed push with the token to send it to, read when it was claimed.
@MemberwiseInit
public struct ClaimedPush: Sendable, Hashable {
    public var entry: OutboxEntry
    /// The device's current token for the push's kind.
    public var deviceToken: String
    /// The APNs environment of the device's token, read with it (nil: the key's).
    public var apnsEnvironment: APNsEnvironment?
    /// The app's APNs key, read with the token (nil: the default key).
    public var apnsKey: String?
    /// The app's FCM account, read with the token (nil: the default account).
    public var fcmAccount: String?
    /// A browser's subscription keys, read with its endpoint (the token): a push waiting while
    /// the subscription was renewed is encrypted for the new keys.
    public var webPushKeys: WebPushKeys? = nil

    /// The push to send: expiring when the entry does (whole seconds; 0 for a "now or never"
    /// push), through the app's key or account and to the host of the token's environment, as
    /// they were when it was claimed (a token and its environment change together, at activation).
    public var push: Push {
        var payload = entry.payload
        switch payload {
        case .apns(var apns):
            apns.key = apnsKey
            apns.environment = apnsEnvironment
            payload = .apns(apns)
        case .fcm(var fcm):
            fcm.account = fcmAccount
            payload = .fcm(fcm)
        case .webPush(var webPush):
            webPush.keys = webPushKeys
            payload = .webPush(webPush)
        case .hms:
            break
        }
        return Push(
            id: entry.pushID,
            token: deviceToken,
            payload: payload,
            expiration: entry.nowOrNever ? 0 : entry.expiresAt / 1000,
            collapseID: entry.collapseID,
            traceParent: entry.traceParent
        )
    }
}

/// Outcomes the dispatcher learned at one time, recorded with other batches' in one write
/// (`OutboxStore.complete(_:)`).
@MemberwiseInit
public struct CompletionBatch: Sendable, Hashable {
    public var completions: [PushCompletion]
    /// When they were learned (milliseconds since the epoch): the pushes' time of change.
    public var now: Int64
}

/// What the dispatcher learned about a claimed push.
@MemberwiseInit
public struct PushCompletion: Sendable, Hashable {
    /// What to do with the push.
    public enum Disposition: Sendable, Hashable {
        /// A final state (delivered, failed, expired, token dead).
        case finish(PushState)
        /// Back to the queue, to be tried again at the given time (milliseconds since the epoch).
        case retry(at: Int64)
        /// Back to the queue, due at the given time, without counting the claim's attempt: the
        /// push was never tried (its network could not be reached), so its count of attempts,
        /// which sets its backoff, stays what it was before the claim.
        case requeue(at: Int64)
    }

    public var pushID: String
    public var disposition: Disposition
    public var reason: String?
    /// For a dead token: the device and token to clear (only if the device still has it).
    public var deadToken: (deviceID: String, token: String)?

    /// A final state and nothing else to write (no dead token to clear): what the dispatcher
    /// may record late and together, and what a store writes in its one-statement path.
    public var onlyFinishes: Bool {
        if case .finish = disposition { deadToken == nil } else { false }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.pushID == rhs.pushID && lhs.disposition == rhs.disposition && lhs.reason == rhs.reason
            && lhs.deadToken?.deviceID == rhs.deadToken?.deviceID && lhs.deadToken?.token == rhs.deadToken?.token
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(pushID)
    }
}

/// An ingest call's writes, committed together or not at all.
public struct Ingest: Sendable, Hashable {
    /// Makes the ingest happen at most once; a second ingest with the same key returns the first
    /// one's receipt and writes nothing.
    public var idempotencyKey: String?
    public var message: MessageRecord?
    public var pushes: [OutboxEntry]
    /// The answer to give again for a repeated key (opaque to the store).
    public var receipt: [UInt8]
    /// The message's deliveries over live channels, pending until acknowledged (see
    /// `LiveSessionStore`); written with the message, or not at all.
    public var handovers: [LiveHandover]
    /// The pushes the accepting node sends itself, written already claimed by it; `nil`: every
    /// push is written queued, for any worker to claim.
    public var claim: IngestClaim?
    /// The version of the recipients the ingest was made for (`DeviceStore.recipientsForIngest`):
    /// if the user's devices, presence or live channels changed since, nothing is written and
    /// the answer is `stale`. `nil`: written whatever changed. Only an engine that gives versions
    /// (PostgreSQL) checks them; SQLite reads afresh each time and gives none.
    public var recipientsVersion: RecipientsVersion?
    /// The pushes' deadlines (`PushDeadline`); written with them, or not at all.
    public var deadlines: [PushDeadline] = []

    public init(
        idempotencyKey: String?,
        message: MessageRecord?,
        pushes: [OutboxEntry],
        receipt: [UInt8],
        handovers: [LiveHandover] = [],
        claim: IngestClaim? = nil,
        recipientsVersion: RecipientsVersion? = nil
    ) {
        self.idempotencyKey = idempotencyKey
        self.message = message
        self.pushes = pushes
        self.receipt = receipt
        self.handovers = handovers
        self.claim = claim
        self.recipientsVersion = recipientsVersion
    }
}

/// Pushes an ingest writes already claimed, so the node that accepts them hands them to its own
/// dispatcher in memory instead of claiming them back with a statement.
///
/// Each push named is written as `claim` would leave it for `owner`: `sending`, one attempt more
/// than its entry says, held through `leaseUntil`. Other workers do not take it before the lease
/// ends; after it, it is due again like any lapsed claim; `complete` and `releaseClaims` treat it
/// as any claim of `owner`.
@MemberwiseInit
public struct IngestClaim: Sendable, Hashable {
    /// Who holds the pushes (the node's dispatcher owner).
    public var owner: String
    /// Milliseconds since the epoch; another worker may take a push that is still unfinished
    /// after this.
    public var leaseUntil: Int64
    /// The pushes written claimed (of the ingest's); the others are written as their entries say.
    public var pushIDs: Set<String>
}

extension Ingest {
    /// The pushes as written: those named by `claim` as claimed (`sending`, one attempt more),
    /// the others as given.
    public var writtenPushes: [(entry: OutboxEntry, claimOwner: String?, claimUntil: Int64?)] {
        pushes.map { push in
            guard let claim, claim.pushIDs.contains(push.pushID) else { return (push, nil, nil) }
            var claimed = push
            claimed.state = .sending
            claimed.attempts += 1
            return (claimed, claim.owner, claim.leaseUntil)
        }
    }

    /// Whether some push is written queued, for any worker (another node's too) to claim.
    public var queuesPushes: Bool {
        // A push written finished (withheld from a device without the notification permission)
        // is nothing for a dispatcher to claim.
        pushes.contains { $0.state == .queued && !(claim?.pushIDs.contains($0.pushID) ?? false) }
    }
}

/// What became of an ingest.
public enum IngestOutcome: Sendable, Hashable {
    /// Written and durable.
    case accepted
    /// The key was seen before; nothing was written. Holds the first ingest's receipt.
    case duplicate(receipt: [UInt8])
    /// The recipients changed since the version the ingest names (`Ingest.recipientsVersion`);
    /// nothing was written, its key included: read them again and make the ingest again.
    case stale

    /// The same answer as a change's outcome (a repeated key is a `duplicate`).
    public var change: ChangeOutcome {
        switch self {
        case .accepted: .applied
        case .duplicate: .duplicate
        case .stale: .stale
        }
    }
}

/// How many pushes are in each state, and how long the queue's oldest has waited; for health
/// and metrics.
@MemberwiseInit
public struct OutboxCounts: Sendable, Hashable {
    public var byState: [PushState: Int]
    /// When the oldest `queued` push was accepted (milliseconds since the epoch; a push waiting
    /// for a retry counts from its acceptance too); `nil` with nothing queued. Claimed pushes
    /// do not count: they are on their way.
    public var oldestQueuedAt: Int64?

    public subscript(state: PushState) -> Int { byState[state] ?? 0 }
}
