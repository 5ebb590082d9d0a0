import Crypto
import Foundation
import HeraldBatching
import HeraldCrypto
import HeraldDispatch
import HeraldDomain
import HeraldPush
import HeraldRelayAPI
import HeraldStore
import HeraldTracing
import Logging
import Metrics
import Synchronization

/// What the relay's parts share: the store, the settings, the master key, the clock, the app
/// cache, the counters and the hooks, with the helpers more than one part uses (validation,
/// sealing, store calls, building a message push).
///
/// The parts keep their own state; nothing here belongs to one of them alone.
final class RelayContext: Sendable {
    let store: any HeraldStore
    let configuration: RelayConfiguration
    let masterKey: MasterKey
    let logger: Logger
    /// The relay's one clock: what it stamps, and what its timers wait on.
    let clock: any HeraldClock
    let metrics = RelayMetrics()
    /// Apps by id, with when each was read: every push looks its app up, and apps change rarely.
    /// A change made here is cached at once; one made on another node sharing the store is read
    /// once the entry is older than `appCacheLifetime`.
    let appCache = Mutex<[String: (app: AppRecord, readAt: Int64)]>([:])
    /// How long (milliseconds) a cached app is used before it is read again.
    static let appCacheLifetime: Int64 = 5_000
    /// Signalled when webhook events were written: wakes the webhook dispatcher.
    let webhooksWritten = WakeSignal()
    /// Signalled when a callback was scheduled or snoozed: wakes the callback scheduler.
    let callbacksDue = WakeSignal()
    /// Wakes the deadline scheduler: a deadline was armed here (it may be due before the one the
    /// scheduler sleeps for).
    let deadlinesArmed = WakeSignal()
    private let onAccepted: @Sendable () -> Void
    /// This node's dispatcher, taking the pushes its ingests keep in memory (nil: every push is
    /// claimed from the store).
    let handOff: (any PushHandOff)?
    /// Called after an app was added or changed.
    let onAppSaved: @Sendable (AppRecord) -> Void
    /// The spans of each push's trace; off unless the server configured tracing.
    let tracing: PushTracing

    init(
        configuration: RelayConfiguration,
        store: any HeraldStore,
        masterKey: MasterKey,
        logger: Logger,
        clock: any HeraldClock,
        onAccepted: @escaping @Sendable () -> Void,
        onAppSaved: @escaping @Sendable (AppRecord) -> Void,
        handOff: (any PushHandOff)? = nil,
        tracing: PushTracing = .off
    ) {
        self.tracing = tracing
        self.configuration = configuration
        self.store = store
        self.masterKey = masterKey
        self.logger = logger
        self.clock = clock
        self.onAccepted = onAccepted
        self.onAppSaved = onAppSaved
        self.handOff = handOff
    }

    /// Tells the dispatcher that pushes were queued.
    func accepted() { onAccepted() }

    /// `entry` with the token and route a claim would read for it (the device's token for its
    /// kind, the token's environment, the app's key or account), for this node's dispatcher to
    /// send without a claim; `nil` when the device has no token for it.
    func sendable(_ entry: OutboxEntry, device: DeviceRecord, app: AppRecord) -> ClaimedPush? {
        guard let token = entry.usesVoIPToken ? device.voipToken : device.messagingToken else { return nil }
        return ClaimedPush(
            entry: entry,
            deviceToken: token,
            apnsEnvironment: device.apnsEnvironment,
            apnsKey: app.apnsKey,
            fcmAccount: app.fcmAccount,
            webPushKeys: device.webPushKeys
        )
    }

    /// An app, from the cache or the store.
    func app(id: String) async throws(RelayError) -> AppRecord? {
        let time = clock.now()
        if let cached = appCache.withLock({ $0[id] }), time - cached.readAt < Self.appCacheLifetime {
            return cached.app
        }
        let app = try await storing { try await $0.app(id: id) }
        appCache.withLock { $0[id] = app.map { ($0, time) } }
        return app
    }

    /// Runs a store call; any failure is logged and answered as `unavailable`.
    func storing<T: Sendable>(_ work: @Sendable (any HeraldStore) async throws -> T) async throws(RelayError) -> T {
        try await Self.storing(store, logger: logger, work)
    }

    /// `storing`, for the parts that hold a store without a context (`RelayKeys`).
    static func storing<T: Sendable>(
        _ store: any HeraldStore,
        logger: Logger,
        _ work: @Sendable (any HeraldStore) async throws -> T
    ) async throws(RelayError) -> T {
        do {
            return try await work(store)
        } catch {
            logger.error("store failure", metadata: ["error": "\(error)"])
            throw RelayError.unavailable
        }
    }

    /// Whether pushes can reach this device's platform through the configured provider stage.
    /// The deadlines' rules with this relay's configuration.
    var deadlinePlanner: DeadlinePlanner {
        DeadlinePlanner(callKitReportWindow: configuration.deadlines.callKitReportWindow)
    }

    func isPushable(_ device: DeviceRecord) -> Bool {
        configuration.platforms.contains(device.platform)
    }

    // MARK: Sealing

    static func secretKeyContext(_ deviceID: String) -> String { "herald-relay-secret-key:" + deviceID }
    static func sessionContext(_ deviceID: String) -> String { "herald-relay-session-keys:" + deviceID }
    static func messageContext(_ messageID: String) -> String { "herald-message-text:" + messageID }
    static func senderContext(_ messageID: String) -> String { "herald-message-sender:" + messageID }
    static func authorContext(conversation: String, at time: Int64) -> String {
        "herald-transcript-author:\(conversation):\(time)"
    }

    /// A message's sender sealed at rest (JSON `{"id","name"}`), bound to the message id like its
    /// text: a sealed sender moved to another row does not open.
    func sealSender(_ sender: Party, messageID: String) -> [UInt8] {
        seal(sender, context: Self.senderContext(messageID))
    }

    static func callerContext(_ callID: String) -> String { "herald-call-caller:" + callID }

    /// A call's caller sealed at rest, bound to the call id.
    func sealCaller(_ caller: Party, callID: String) -> [UInt8] {
        seal(caller, context: Self.callerContext(callID))
    }

    /// A stored call's caller, or `unavailable` (logged) when it does not open.
    func openCaller(_ call: CallRecord) throws(RelayError) -> Party {
        guard let caller = open(call.sealedCaller, context: Self.callerContext(call.id)) else {
            logger.error("cannot open a stored call's caller", metadata: ["call": "\(call.id)"])
            throw RelayError.unavailable.with(detail: "the relay cannot read this call")
        }
        return caller
    }

    /// A chat event's author sealed at rest, bound to the conversation and the event's time (the
    /// position is not known before the store gives it), like the event's text.
    func sealAuthor(_ author: Party, conversation: String, at time: Int64) -> [UInt8] {
        seal(author, context: Self.authorContext(conversation: conversation, at: time))
    }

    /// A stored message's sender, or `unavailable` (logged) when it does not open.
    func openSender(_ message: MessageRecord) throws(RelayError) -> Party {
        guard let sender = open(message.sealedSender, context: Self.senderContext(message.id)) else {
            logger.error("cannot open a stored message's sender", metadata: ["message": "\(message.id)"])
            throw RelayError.unavailable.with(detail: "the relay cannot read this message")
        }
        return sender
    }

    /// A stored chat event's author, or `unavailable` (logged) when it does not open.
    func openAuthor(_ event: TranscriptEvent) throws(RelayError) -> Party {
        let context = Self.authorContext(conversation: event.conversation, at: event.at)
        guard let author = open(event.sealedAuthor, context: context) else {
            logger.error(
                "cannot open a stored chat event's author",
                metadata: ["conversation": "\(event.conversation)", "position": "\(event.position)"]
            )
            throw RelayError.unavailable.with(detail: "the relay cannot read this chat")
        }
        return author
    }

    private func seal(_ party: Party, context: String) -> [UInt8] {
        // Encoding two strings cannot fail.
        let json = (try? JSONEncoder().encode(party)) ?? Data()
        return masterKey.seal(SecureBytes(copying: Array(json)), context: context)
    }

    private func open(_ sealed: [UInt8], context: String) -> Party? {
        guard let bytes = try? masterKey.open(sealed, context: context).copyBytes() else { return nil }
        return try? JSONDecoder().decode(Party.self, from: Data(bytes))
    }

    /// A push of `content` for `device` of `app`, due at `time`, its content sealed with the
    /// device's session keys; each kind's network settings are `PushContent`'s.
    func sealedPush(
        _ content: PushContent,
        for device: DeviceRecord,
        app: AppRecord,
        at time: Int64,
        expiresAt: Int64
    ) throws -> OutboxEntry {
        let pushID = TimeOrderedID.make(milliseconds: time)
        let sealer = try sealer(for: device)
        let payload: Push.Payload =
            switch try content.seal(for: device, pushID: pushID, app: app, sealer: sealer) {
            case .data(let data, .fcm):
                .fcm(FCMPayload(package: app.id, priority: content.fcmPriority, data: data))
            case .data(let data, .hms):
                .hms(HMSPayload(package: app.id, urgency: content.fcmPriority == .high ? .high : .normal, data: data))
            case .data(let data, .webPush):
                .webPush(WebPushPayload(app: app.id, urgency: content.webPushUrgency, json: DataFields.json(data)))
            case .apns(let json):
                .apns(
                    APNsPayload(
                        topic: app.id + (content.kind == .call ? ".voip" : ""),
                        type: content.kind == .call ? .voip : .alert,
                        priority: content.apnsPriority,
                        apnsID: pushID,
                        json: json
                    )
                )
            }
        return OutboxEntry(
            pushID: pushID,
            deviceID: device.id,
            kind: content.kind,
            subjectID: content.subjectID,
            priority: content.kind == .call || content.kind == .callback ? 10 : 5,
            payload: payload,
            nextAttemptAt: time,
            expiresAt: expiresAt,
            createdAt: time,
            updatedAt: time
        )
    }

    /// The sealer for a device, from its stored session keys.
    func sealer(for device: DeviceRecord) throws(RelayError) -> EnvelopeSealer {
        EnvelopeSealer(sessionKeys: try sessionKeys(for: device))
    }

    /// A device's session keys (the relay's side), opened with the master key.
    func sessionKeys(for device: DeviceRecord) throws(RelayError) -> SessionKeys {
        guard let keyID = KeyID(hex: device.keyID) else {
            throw RelayError.unavailable.with(detail: "device \(device.id) has an unreadable key id")
        }
        do {
            let bytes = try masterKey.open(device.sealedSessionKeys, context: Self.sessionContext(device.id))
                .copyBytes()
            guard bytes.count == 64 else { throw HeraldCryptoError.invalidKey }
            return try SessionKeys(
                receive: SecureBytes(copying: bytes[0..<32]),
                transmit: SecureBytes(copying: bytes[32..<64]),
                keyID: keyID
            )
        } catch {
            // A wrong master key, or a damaged row: the operator must know, the caller must not
            // see details.
            logger.error("cannot open a device's session keys", metadata: ["device": "\(device.id)"])
            throw RelayError.unavailable.with(detail: "the relay cannot use this device's keys")
        }
    }

    /// The messaging push of `content` for one device, expiring after the app's `message_ttl`;
    /// priority 5 (the provider sends it to FCM as `HIGH`: the app shows it at once); its push id
    /// is also its apns-id. iOS: an APNs alert sealed within the alert budget. Android: an FCM
    /// data message within FCM's 4096 bytes.
    ///
    /// Shared: ingest pushes messages (and what a live channel did not deliver, its expiration
    /// from `acceptedAt`), transcripts push a chat's lines as a message.
    func messagePush(
        _ content: MessageContent,
        app: AppRecord,
        device: DeviceRecord,
        at time: Int64,
        options: MessagePushOptions = MessagePushOptions(),
        acceptedAt: Int64? = nil
    )
        throws(RelayError) -> OutboxEntry
    {
        var options = options
        if !options.priorityRequested, let priority = APNsPriority(rawValue: app.messagePriority) {
            options.priority = priority
        }
        var entry: OutboxEntry
        do {
            // A push made later for an accepted message (a live delivery not acknowledged) expires
            // when a direct push would have.
            let expiresAt = (acceptedAt ?? time) + Self.messageLifetime(app: app, options: options)
            entry = try sealedPush(.message(content, options), for: device, app: app, at: time, expiresAt: expiresAt)
        } catch let error as RelayError {
            throw error
        } catch {
            if content.data?.isEmpty == false {
                throw RelayError.invalidField("data", "leaves no room for the message in the push")
            }
            if content.title != nil {
                throw RelayError.invalidField("title", "leaves no room for the message in the push")
            }
            if !options.publicData.isEmpty {
                throw RelayError.invalidField("public_data", "leaves no room for the message in the push")
            }
            throw RelayError.invalidField("from.name", "leaves no room for the message in the push")
        }
        if app.collapseByConversation { entry.collapseID = Self.collapseID(conversation: content.conversationID) }
        entry.nowOrNever = options.expiration == 0
        // Only an app that orders its queue by the customer's wait gives the store a wait; one
        // not known is the push's own time in the queue.
        if app.queueOrder == .customerWait { entry.waitingSince = min(options.waitingSince ?? time, time) }
        return entry
    }

    /// How long (milliseconds) a message push may wait: the request's expiration, else the app's
    /// `message_ttl`. "Now or never" (0) gives the relay `nowOrNeverWindow` to make its one
    /// attempt (the push network gets expiration 0); a push not claimed in it expires unsent.
    static func messageLifetime(app: AppRecord, options: MessagePushOptions) -> Int64 {
        guard let expiration = options.expiration else { return app.messageTTL * 1000 }
        return expiration == 0 ? nowOrNeverWindow : expiration * 1000
    }

    /// The relay's window for a "now or never" push to be claimed and make its one attempt.
    static let nowOrNeverWindow: Int64 = 10_000

    /// A conversation's collapse id: APNs allows 64 bytes, so longer ids are hashed.
    static func collapseID(conversation: String) -> String {
        guard conversation.utf8.count > 64 else { return conversation }
        return "c-" + SHA256.hash(data: Array(conversation.utf8)).map { String(format: "%02x", $0) }.joined().prefix(62)
    }
}

/// The relay's counters, through swift-metrics.
struct RelayMetrics: Sendable {
    let activations = Counter(label: "herald_relay_activations_total")
    let messages = Counter(label: "herald_relay_messages_accepted_total")
    let calls = Counter(label: "herald_relay_calls_accepted_total")
    let duplicates = Counter(label: "herald_relay_duplicate_ingests_total")
    /// Messages made again because the recipients the node kept had changed (PostgreSQL).
    let staleIngests = Counter(label: "herald_relay_stale_ingests_total")
    let queued = Counter(label: "herald_relay_pushes_queued_total")
    let skipped = Counter(label: "herald_relay_pushes_skipped_total")
    let callbacks = Counter(label: "herald_relay_callbacks_scheduled_total")
    let callbackPushes = Counter(label: "herald_relay_callback_pushes_total")
    let callbackAnswers = Counter(label: "herald_relay_callback_answers_total")

    /// Messages for users without a device, by what became of them.
    func undeliverable(_ outcome: UndeliverableOutcome) -> Counter {
        Counter(label: "herald_relay_undeliverable_messages_total", dimensions: [("outcome", outcome.rawValue)])
    }
}

/// What a push carries, sealed for each device, and how each kind goes on the networks: a call
/// by PushKit (`<bundle>.voip`) at once, a callback's dialog as an alert at once, a missed call
/// as an alert when convenient, a message as an alert at its priority; on FCM a call, a callback
/// and a message are HIGH (the app shows them at once), a missed call NORMAL.
enum PushContent: Sendable {
    case message(MessageContent, MessagePushOptions)
    case call(CallContent)
    case missedCall(CallContent)
    case callback(CallbackContent)

    var kind: OutboxKind {
        switch self {
        case .message: .message
        case .call: .call
        case .missedCall: .missedCall
        case .callback: .callback
        }
    }

    /// The message, call or callback push the push is for.
    var subjectID: String {
        switch self {
        case .message(let content, _): content.messageID
        case .call(let content), .missedCall(let content): content.callID
        case .callback(let content):
            CallbackPushSubject.make(callbackID: content.callbackID, push: Int(content.sequence))
        }
    }

    var fcmPriority: FCMPriority {
        if case .missedCall = self { return .normal }
        return .high
    }

    /// Web Push's `Urgency`: a call and a callback's dialog `high`, a message by its priority
    /// (APNs' immediate is `high`), a missed call `normal`.
    var webPushUrgency: WebPushUrgency {
        switch self {
        case .call, .callback: .high
        case .message(_, let options): options.priority == .immediate ? .high : .normal
        case .missedCall: .normal
        }
    }

    var apnsPriority: APNsPriority {
        switch self {
        case .message(_, let options): options.priority
        case .call, .callback: .immediate
        case .missedCall: .conserve
        }
    }

    /// Seals the content for one device: the APNs JSON on iOS, the data fields (fitted to the
    /// device's network) everywhere else.
    func seal(for device: DeviceRecord, pushID: String, app: AppRecord, sealer: EnvelopeSealer) throws -> Sealed {
        let target = PushTarget(deviceID: device.id, pushID: pushID)
        guard let carrier = device.platform.dataCarrier else {
            switch self {
            case .message(let content, let options):
                return .apns(
                    try PushPayload.message(content, app: app, for: target, sealer: sealer, options: options).body
                )
            case .call(let content): return .apns(try PushPayload.call(content, for: target, sealer: sealer))
            case .missedCall(let content):
                return .apns(try PushPayload.missedCall(content, for: target, sealer: sealer))
            case .callback(let content):
                return .apns(try CallbackPayload.apns(content, app: app, for: target, sealer: sealer))
            }
        }
        let data: [String: String] =
            switch self {
            case .message(let content, let options):
                try PushPayload.fcmMessage(
                    content,
                    app: app,
                    for: target,
                    sealer: sealer,
                    options: options,
                    carrier: carrier
                )
                .data
            case .call(let content): try PushPayload.fcmCall(content, for: target, sealer: sealer, carrier: carrier)
            case .missedCall(let content):
                try PushPayload.fcmMissedCall(content, for: target, sealer: sealer, carrier: carrier)
            case .callback(let content): try CallbackPayload.fcm(content, app: app, for: target, sealer: sealer)
            }
        return .data(data, carrier)
    }

    /// Sealed content, as its network carries it.
    enum Sealed {
        case data([String: String], DataCarrier)
        case apns(String)
    }
}
