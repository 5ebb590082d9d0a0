import HeraldMacros
public import HeraldPush

/// One write the relay asks of the store. A relay operation's planner decides its changes from
/// what it read; the committer hands them to `ChangeStore.apply`, which writes a batch of them in
/// one transaction and answers for each.
///
/// A case names rows, not a feature: a new relay rule that writes the same rows needs no new
/// store method in either engine.
public enum StoreChange: Sendable, Hashable {
    /// Adds or replaces an app (by id). Always `applied`.
    case saveApp(AppRecord)
    /// Adds or replaces a device (by id); its tokens are taken from any other device that had
    /// them. Always `applied`.
    case saveDevice(DeviceRecord)
    /// Sets a device's tokens (see `TokenUpdate`). `stale` when the device is gone.
    case updateTokens(TokenUpdate)
    /// Removes a device with its tokens, keys, credential, presence and chat disconnects. `stale`
    /// when there was no such device.
    case deleteDevice(id: String)
    /// Adds or replaces a device's presence (its last heartbeat). Always `applied`.
    case savePresence(PresenceRecord)
    /// Records the notification permission a device reports, with the events that report a
    /// change. `applied` when it differed (the events are written), `duplicate` when the device
    /// had it already (nothing is written: of two reports racing, one changes it), `stale` when
    /// the device is gone.
    case setNotificationPermission(PermissionReport)
    /// Writes webhook events; an id already stored is kept. Always `applied`.
    case enqueueWebhookEvents([WebhookEvent])
    /// Stores a new API key, with the audit entry that records it. `duplicate` when its id is
    /// taken (nothing is written).
    case insertAPIKey(APIKeyRecord, audit: AuditEntry?)
    /// Revokes an API key at a time, with the audit entry that records it. `stale` when there is
    /// no such key or it was revoked already (nothing is written: the first revocation's time
    /// stays).
    case revokeAPIKey(id: String, at: Int64, audit: AuditEntry?)
    /// Appends an entry to the audit log. Always `applied`.
    case appendAudit(AuditEntry)
    /// Writes a message, its pushes and its live handovers, once per idempotency key. `duplicate`
    /// when the key was taken (by this ingest's twin, even one committing at the same moment):
    /// nothing is written, and `OutboxStore.receipt(idempotencyKey:)` reads the first one's
    /// receipt. `stale` when the recipients changed since `Ingest.recipientsVersion`: nothing is
    /// written, its key included.
    case accept(Ingest)
    /// A call's ingest with its record, written together; answers as `accept`.
    case acceptCall(Ingest, call: CallRecord)
    /// Holds the ingest's message for a user with no device (of `appID`, if given) until `until`;
    /// answers as `accept`, and `stale` also when such a device activated since the ingest read
    /// none (it is pushed to instead).
    case hold(Ingest, until: Int64, appID: String?)
    /// Ends a ringing call with what its end writes (`CallEnd`), as a compare-and-set: `stale`
    /// when the call is unknown or had ended already (nothing is written).
    case endCall(CallEnd)
    /// A device of a ringing call reports it rings (see `CallRinging`). `stale` when the call is
    /// unknown or ended (nothing is written).
    case reportCallRinging(CallRinging)
    /// A phone's receipt for a push it was sent, with the webhook events it writes. `duplicate`
    /// when the push has a receipt of that stage already (a receipt sent again), `stale` when the
    /// push is gone; neither writes anything.
    case recordReceipt(PushReceipt, events: [WebhookEvent])
    /// Writes a new callback with its first history line, once per idempotency key: `duplicate`
    /// when the key was taken (nothing is written; `CallbackStore.callback(idempotencyKey:)`
    /// reads the one stored under it).
    case scheduleCallback(CallbackRecord, history: CallbackHistoryEntry, idempotencyKey: String?)
    /// A callback's change, made only if it still has the version read (see `CallbackChange`):
    /// `stale` when the version moved (another answer or claim won) or the callback is unknown.
    case changeCallback(CallbackChange)
    /// Records (or replaces) a device's disconnect from a chat with the webhook events that
    /// report it. Always `applied`.
    case saveDisconnect(ChatDisconnect, events: [WebhookEvent])
    /// Notes that a disconnected device got its first push. `stale` when it is no longer
    /// disconnected.
    case markDisconnectPushed(deviceID: String, conversation: String)
    /// Ends an open chat at a time. `duplicate` when it had ended (its first end stays), `stale`
    /// when the conversation has no chat.
    case endChat(conversation: String, at: Int64)
    /// Records a device's live session, replacing the one it had (on any node). Always
    /// `applied`.
    case saveLiveSession(LiveSessionRecord)
    /// Removes a device's live session if it is still this one. `stale` when a newer one
    /// replaced it or there is none.
    case removeLiveSession(deviceID: String, sessionID: String)
    /// Replaces clear senders left by an older version with their sealed form (see
    /// `SealingStore`). Always `applied`.
    case sealSenders([ClearSender.Record: [UInt8]])
    /// Releases a held message into its pushes (written queued) if it is still held at `now`.
    /// `stale` when another release took it or its hold ended (nothing is written): of concurrent
    /// releases of one message exactly one writes its pushes.
    case releaseHeld(HeldRelease, now: Int64)
    /// Removes a pending live handover. `stale` when it was settled or taken by the sweep before.
    case settleLiveHandover(messageID: String, deviceID: String)
    /// A node's heartbeat: its sessions named last until `until`. Its other sessions are left to
    /// lapse at the end of their lease (a channel that closed without its removal, or one held
    /// before a restart): removing them here could remove a channel opened while the heartbeat was
    /// on its way. Always `applied`.
    case renewLiveSessions(nodeID: String, keeping: Set<String>, until: Int64)
    /// Records how a claimed webhook event ended, if `owner` still holds it. `stale` when it does
    /// not (a sender whose lease lapsed and was taken over changes nothing).
    case completeWebhookEvent(id: String, owner: String, WebhookCompletion, now: Int64)
    /// Removes a device's disconnect if it is still `disconnect` (the one the caller read), with
    /// the webhook events made of it. `stale` when the device has no disconnect in the
    /// conversation or another one since.
    case removeDisconnect(ChatDisconnect, events: [WebhookEvent])
    /// Writes deadlines for pushes already written (one a receipt arms); a push's deadline for
    /// the same action that is there already is kept. Always `applied`.
    case armDeadlines([PushDeadline])
    /// Removes the deadlines of these pushes (a phone's receipt says it was shown): none fires.
    /// Always `applied`, whether there were any or not.
    case cancelDeadlines(pushIDs: [String])
    /// Removes a push's deadline that `owner` claimed (`StoreWork.claimDueDeadlines`) and writes
    /// `then`, what its action wrote, in the same transaction. `stale` when `owner` no longer
    /// holds it (a receipt cancelled it, or its claim lapsed and another node took it): nothing
    /// of `then` is written. So a deadline acts at most once, across nodes and restarts.
    case settleDeadline(PushDeadline, owner: String, then: [StoreChange])
    /// Counts a VoIP push the device did not report to CallKit (`UnreportedCalls`). Always
    /// `applied`.
    case countUnreportedCall(deviceID: String, at: Int64)
    /// Adds or replaces an operator account (by name), with the audit entry that records it.
    /// Always `applied`.
    case saveOperator(OperatorRecord, audit: AuditEntry?)
    /// Removes an operator account and every session it has, with the audit entry that records
    /// it. `stale` when there is no such account (nothing is written).
    case deleteOperator(name: String, audit: AuditEntry?)
    /// Stores a new console session. `duplicate` when its id is taken (nothing is written).
    case saveConsoleSession(ConsoleSessionRecord)
    /// Removes a console session (a sign-out). `stale` when there is none with that id.
    case deleteConsoleSession(id: String)
    /// Removes every console session that expires before `before` (ms). Always `applied`.
    case deleteExpiredConsoleSessions(before: Int64)
    /// The store's work on its queues (see `StoreWork`), applied in a batch of its own. Answers
    /// `answered`.
    case work(StoreWork)
}

/// A device's report that a ringing call rings on it: its report becomes `ringing` (a device that
/// is not among the call's is added), and `firstRinging` is written (and `ringingAt` set) if no
/// device had reported ringing before.
@MemberwiseInit
public struct CallRinging: Sendable, Hashable {
    public var callID: String
    public var deviceID: String
    public var at: Int64
    public var firstRinging: [WebhookEvent]
}

/// How `ChangeStore.apply` answered for one change.
public enum ChangeOutcome: Sendable, Hashable {
    /// The change was written.
    case applied
    /// The store held what the change writes already (a repeated report, a retried insert):
    /// nothing was written.
    case duplicate
    /// The row the change was planned against is gone (or was never there): nothing was written.
    case stale
    /// Store work (`StoreChange.work`) was done: what it took, or how many rows it changed.
    case answered(WorkAnswer)
}

/// Late or refreshed tokens for one device.
@MemberwiseInit
public struct TokenUpdate: Sendable, Hashable {
    public var deviceID: String
    /// The new messaging token: `nil` leaves it as it is, an empty string removes it.
    public var messaging: String?
    /// The new VoIP token: `nil` leaves it as it is, an empty string removes it.
    public var voip: String?
    /// When (ms): a token set clears the device's `tokenDeadReason` and stamps `updatedAt`.
    public var at: Int64
    /// A browser's subscription keys, written with `messaging` (its endpoint) whenever that is
    /// given: a subscription's endpoint and keys change together.
    public var webPushKeys: WebPushKeys? = nil

    /// `device` as it is after the update (what the store writes).
    public func applied(to device: DeviceRecord) -> DeviceRecord {
        var device = device
        if let messaging {
            device.messagingToken = messaging.isEmpty ? nil : messaging
            device.webPushKeys = messaging.isEmpty ? nil : webPushKeys
            device.tokenDeadReason = nil
            device.updatedAt = at
        }
        if let voip {
            device.voipToken = voip.isEmpty ? nil : voip
            device.tokenDeadReason = nil
            device.updatedAt = at
        }
        return device
    }
}

/// A device's report of its notification permission.
@MemberwiseInit
public struct PermissionReport: Sendable, Hashable {
    public var deviceID: String
    public var permission: NotificationPermission
    /// When (ms): `notificationPermissionAt` once it changed.
    public var at: Int64
    /// Written with the change, and only when the permission changed.
    public var events: [WebhookEvent]
}

/// The store's one write: a batch of changes in one transaction.
public protocol ChangeStore: Sendable {
    /// Applies `changes` in order in one transaction, committed before it returns, and answers
    /// one outcome per change, in their order. A change that is `duplicate` or `stale` writes
    /// nothing and does not undo the others; an error undoes them all.
    func apply(_ changes: [StoreChange]) async throws -> [ChangeOutcome]
}

extension ChangeStore {
    /// Applies one change.
    @discardableResult
    public func apply(_ change: StoreChange) async throws -> ChangeOutcome {
        let outcomes = try await apply([change])
        guard outcomes.count == 1, let outcome = outcomes.first else {
            throw StoreError.corrupt.with(detail: "the store answered \(outcomes.count) outcomes for one change")
        }
        return outcome
    }

    /// Adds or replaces an app (by id).
    public func saveApp(_ app: AppRecord) async throws {
        try await apply(.saveApp(app))
    }

    /// Adds or replaces a device (by id); its tokens are taken from any other device that had them.
    public func saveDevice(_ device: DeviceRecord) async throws {
        try await apply(.saveDevice(device))
    }

    /// Adds or replaces a device's presence.
    public func savePresence(_ presence: PresenceRecord) async throws {
        try await apply(.savePresence(presence))
    }

    /// Removes a device; whether it existed.
    public func deleteDevice(id: String) async throws -> Bool {
        try await apply(.deleteDevice(id: id)) == .applied
    }

    /// Writes webhook events (an id already stored is kept).
    public func enqueueWebhookEvents(_ events: [WebhookEvent]) async throws {
        guard !events.isEmpty else { return }
        try await apply(.enqueueWebhookEvents(events))
    }

    /// Stores a new API key; `false` when its id is taken.
    public func insertAPIKey(_ key: APIKeyRecord) async throws -> Bool {
        try await apply(.insertAPIKey(key, audit: nil)) == .applied
    }

    /// Revokes an API key; `false` when there is no such key or it was revoked already.
    public func revokeAPIKey(id: String, at: Int64) async throws -> Bool {
        try await apply(.revokeAPIKey(id: id, at: at, audit: nil)) == .applied
    }

    /// Appends an entry to the audit log.
    public func appendAudit(_ entry: AuditEntry) async throws {
        try await apply(.appendAudit(entry))
    }
}

extension ChangeStore where Self: DeviceStore {
    /// Sets a device's tokens and reads it back; `nil` when the device is gone.
    public func updateTokens(
        deviceID: String,
        messaging: String?,
        voip: String?,
        now: Int64
    ) async throws
        -> DeviceRecord?
    {
        let update = TokenUpdate(deviceID: deviceID, messaging: messaging, voip: voip, at: now)
        guard try await apply(.updateTokens(update)) == .applied else { return nil }
        return try await device(id: deviceID)
    }

    /// Records a reported notification permission and reads the device back; `nil` when the
    /// device is gone.
    public func setNotificationPermission(
        deviceID: String,
        _ permission: NotificationPermission,
        now: Int64,
        events: [WebhookEvent]
    ) async throws -> NotificationPermissionChange? {
        let report = PermissionReport(deviceID: deviceID, permission: permission, at: now, events: events)
        let outcome = try await apply(.setNotificationPermission(report))
        guard outcome != .stale, let device = try await device(id: deviceID) else { return nil }
        return NotificationPermissionChange(device: device, changed: outcome == .applied)
    }
}
