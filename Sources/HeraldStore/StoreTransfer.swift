import HeraldMacros

/// What moves when a deployment changes engine (`herald store migrate`): every record a relay
/// needs to carry on where the old store stopped, as types, so no engine reads another's tables.
///
/// Moved: apps; devices with their tokens, sealed keys and credential hashes; presence; messages
/// kept for fetch-by-id (sealed); idempotency keys with their receipts; every push not finished
/// yet, with its history; chats with their transcripts and disconnects; callbacks with their
/// history and idempotency key; calls (ringing, and ended ones retention has not deleted yet)
/// with their devices' reports; webhook events not delivered yet; the backends' API keys
/// (revoked ones too: a revoked key must stay refused, not become unknown) with their scopes
/// and rates; the audit log; messages held for a user without a device, still held until
/// their hold ends; the console's operator accounts. Sealed values cross as the bytes they are:
/// the new store is used with the same master key, and nothing here can open them. API keys
/// cross as their secrets' digests, operators as their passwords' Argon2id hashes: no store ever
/// holds a secret.
///
/// Not moved: finished pushes (delivered, failed, expired, token dead, skipped) and their
/// history, the phones' receipts included. Their outcome was final and reported; they are retention's to delete, and they are
/// most of a store's rows. Claims are not moved either: a push a node held in flight is handed
/// over queued, due at once (sent at least once, as after a node's restart). Likewise a callback
/// under a claim is handed over unclaimed (its version kept), a ringing call's missed-call timer
/// unclaimed, and a webhook event being sent pending, its attempts kept. Delivered and failed
/// webhook events are not moved, like finished pushes: their outcome is final. Call stops
/// (`call_stops`) are not moved: each is for one node's live channel, and no node of the old
/// store holds a channel once it stopped. Console sessions are not moved: an operator signs in
/// again on the new nodes, as after any sign-out.
public enum StoreRecord: Sendable, Hashable {
    case app(AppRecord)
    case device(DeviceRecord)
    case presence(PresenceRecord)
    case message(MessageRecord)
    case idempotencyKey(IdempotencyRecord)
    case push(PendingPush)
    case chat(ChatRecord)
    case transcriptEvent(TranscriptEvent)
    case disconnect(ChatDisconnect)
    case callback(CallbackTransfer)
    case call(CallRecord)
    /// Handed over `pending` whatever its state was (`sending` under a lease no node here holds).
    case webhookEvent(StoredWebhookEvent)
    /// Valid or revoked, its secret's digest only.
    case apiKey(APIKeyRecord)
    case auditEntry(AuditEntry)
    /// The hold only: its message (sealed) crosses as a `message` record.
    case heldMessage(HeldMessage)
    /// An operator account, its password's hash only.
    case operatorAccount(OperatorRecord)

    /// The record's kind.
    public var kind: StoreRecordKind {
        switch self {
        case .app: .apps
        case .device: .devices
        case .presence: .presence
        case .message: .messages
        case .idempotencyKey: .idempotencyKeys
        case .push: .pendingPushes
        case .chat: .chats
        case .transcriptEvent: .transcriptEvents
        case .disconnect: .disconnects
        case .callback: .callbacks
        case .call: .calls
        case .webhookEvent: .webhookEvents
        case .apiKey: .apiKeys
        case .auditEntry: .auditEntries
        case .heldMessage: .heldMessages
        case .operatorAccount: .operators
        }
    }
}

/// The kinds of `StoreRecord`, in the order an export hands them over: a record comes after
/// every record it refers to (a presence after its device, a disconnect after its device, a
/// held message after its message). The kinds added later come last, so the lines a dry run
/// printed before keep their order.
public enum StoreRecordKind: String, Sendable, Hashable, CaseIterable, Comparable {
    case apps
    case devices
    case presence
    case messages
    case idempotencyKeys = "idempotency keys"
    case pendingPushes = "pending pushes"
    case chats
    case transcriptEvents = "transcript events"
    case disconnects
    case callbacks
    case calls
    /// Undelivered (pending or sending) only.
    case webhookEvents = "webhook events"
    /// Valid and revoked.
    case apiKeys = "API keys"
    case auditEntries = "audit entries"
    /// Messages still held (their message is counted with the messages).
    case heldMessages = "held messages"
    /// The console's operator accounts (never their sessions).
    case operators

    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// An idempotency key as the outbox keeps it: a repeated ingest with the key answers `receipt`.
@MemberwiseInit
public struct IdempotencyRecord: Sendable, Hashable {
    public var key: String
    /// The first ingest's answer (opaque to the store).
    public var receipt: [UInt8]
    /// Milliseconds since the epoch: when the key was first used (retention forgets it after).
    public var createdAt: Int64
}

/// A push not finished yet, with what its history holds besides its acceptance: each return to
/// the queue, oldest first (`OutboxStore.deliveryLog`).
@MemberwiseInit
public struct PendingPush: Sendable, Hashable {
    /// The push, `queued` (whatever claim the source held on it is not carried).
    public var entry: OutboxEntry
    public var requeues: [DeliveryEvent]
}

/// A callback with what its store keeps beside the record: its history, oldest first, and the
/// idempotency key it was scheduled with (a repeated `POST /v1/callbacks` answers it).
@MemberwiseInit
public struct CallbackTransfer: Sendable, Hashable {
    /// The callback, unclaimed (whatever claim the source held is not carried; its version is).
    public var callback: CallbackRecord
    public var history: [CallbackHistoryEntry]
    public var idempotencyKey: String?
}

/// How many records of each kind a store holds for a transfer.
public struct StoreTally: Sendable, Hashable, CustomStringConvertible {
    public var counts: [StoreRecordKind: Int]

    public init(_ counts: [StoreRecordKind: Int] = [:]) {
        self.counts = counts
    }

    public subscript(kind: StoreRecordKind) -> Int {
        get { counts[kind] ?? 0 }
        set { counts[kind] = newValue }
    }

    /// Every kind's count added up.
    public var total: Int { counts.values.reduce(0, +) }

    /// Counts each record once, by kind.
    public mutating func add(_ records: [StoreRecord]) {
        for record in records { self[record.kind] += 1 }
    }

    /// `apps 1, devices 2, …`, every kind in transfer order, zeros included.
    public var description: String {
        StoreRecordKind.allCases.map { "\($0.rawValue) \(self[$0])" }.joined(separator: ", ")
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        StoreRecordKind.allCases.allSatisfy { lhs[$0] == rhs[$0] }
    }

    public func hash(into hasher: inout Hasher) {
        for kind in StoreRecordKind.allCases { hasher.combine(self[kind]) }
    }
}

/// A store whose contents can be handed to another engine (SQLite: `SQLiteExport`, on a file no
/// node has open).
///
/// The source must not change while it is exported: an engine refuses (with `unavailable`) when
/// it can tell that another process has the data open, and holds others off while it reads.
public protocol StoreExport: Sendable {
    /// How many records of each kind `export(batchSize:into:)` hands over.
    func exportTally() async throws -> StoreTally
    /// Hands every record over, kinds in `StoreRecordKind` order, in batches of at most
    /// `batchSize` records of one kind; returns once `sink` took the last batch. A throw from
    /// `sink` ends the export with that error.
    func export(batchSize: Int, into sink: @Sendable ([StoreRecord]) async throws -> Void) async throws
}

/// A store that can take in another store's contents (both engines; the conformance rule
/// `importsAnotherStoresRecords`).
public protocol StoreImport: Sendable {
    /// How many records of each kind the store holds, counted as `StoreExport.exportTally` counts
    /// them (pushes not finished yet as pending pushes, undelivered webhook events only, API
    /// keys revoked or not, every hold whether or not it ended).
    func importTally() async throws -> StoreTally
    /// Writes everything `source` exports, all or nothing: refused with `StoreError.conflict` when
    /// the store holds any record already, and when the records written are not what `source`
    /// tallied (nothing is then written). Other writers wait until it is done. Returns what was
    /// written.
    func importAll(from source: any StoreExport, batchSize: Int) async throws -> StoreTally
}
