import Foundation
import HeraldCrypto
import HeraldPush
public import HeraldRelayAPI
public import HeraldStore

/// The relay's ingest part: messages, calls and broadcasts into the durable outbox (one sealed
/// push per device, committed before the answer), the push for a message a live channel did not
/// deliver, fetching a message by id, push status, the outbox and device counts, and the purge
/// of what is past retention.
///
/// Its only state is the live channels this node holds (the relay's `live`), which it delivers
/// over instead of pushing; with several nodes, `directory` says which node holds the others.
public final class RelayIngest: Sendable {
    let context: RelayContext
    /// Where a message for a device on screen in its conversation goes instead of a push.
    let live: LiveChannels
    /// Which node holds each device's live channel.
    let directory: any LiveSessionDirectory
    /// Where a message or a call goes on each device.
    let planner: IngestPlanner

    init(context: RelayContext, live: LiveChannels, directory: any LiveSessionDirectory) {
        self.planner = IngestPlanner(configuration: context.configuration)
        self.context = context
        self.live = live
        self.directory = directory
    }

    /// A message's idempotency key as stored: an app's API key keeps keys of its own, so two apps'
    /// backends that happen to use the same key do not answer each other's requests.
    public static func storedKey(message key: String?, app: String?) -> String? {
        key.map { "message:" + (app.map { "app:\($0):" } ?? "") + $0 }
    }

    /// How many pushes are in each state, and how many devices are stored: what `/health` shows.
    public func counts() async throws(RelayError) -> (outbox: OutboxCounts, devices: Int) {
        try await context.storing { store in
            (try await store.outboxCounts(), try await store.deviceCount())
        }
    }

    /// Accepts a message: stores it, seals one messaging push per device that is not looking at
    /// the conversation, and commits both before returning.
    ///
    /// - Parameter app: only this app's devices are recipients, and the idempotency key is this
    ///   app's own (an app's API key); every app's when `nil`.
    public func send(message request: MessageRequest, app: String? = nil) async throws(RelayError) -> IngestReceipt {
        try context.configuration.check(request.to, "to", pattern: .identifier)
        try context.configuration.check(request.from.id, "from.id", pattern: .identifier)
        try context.configuration.checkText(request.from.name, "from.name")
        try context.configuration.check(request.conversation, "conversation", pattern: .identifier)
        guard !request.text.isEmpty else { throw .invalidField("text", "must not be empty") }
        guard request.text.utf8.count <= context.configuration.maximumTextBytes else {
            throw .invalidField("text", "is longer than \(context.configuration.maximumTextBytes) bytes")
        }
        if let key = request.idempotencyKey {
            try context.configuration.check(key, "idempotency_key", pattern: .identifier)
        }
        let options = try context.pushOptions(request)
        let extras = try context.sealedExtras(request.options)

        let time = context.clock.now()
        let messageID = TimeOrderedID.make(milliseconds: time)
        let snapshot = try await context.storing { try await $0.recipientsForIngest(userID: request.to) }
        let draft = MessageDraft(
            request: request,
            app: app,
            options: options,
            extras: extras,
            time: time,
            id: messageID
        )
        return try await send(draft, snapshot.only(app: app))
    }

    /// The message made again from a fresh read of the user's recipients, which `accept` does
    /// not check: the ones it was made for changed before the commit (`IngestOutcome.stale`).
    func sendAgain(_ draft: MessageDraft) async throws(RelayError) -> IngestReceipt {
        context.metrics.staleIngests.increment()
        let fresh = try await context.storing { try await $0.recipients(userID: draft.request.to) }
        return try await send(draft, RecipientsSnapshot(recipients: fresh, version: nil).only(app: draft.app))
    }

    /// The message made for `snapshot` and committed; made again from a fresh read if the
    /// recipients it was made for changed before the commit (`IngestOutcome.stale`). A user
    /// without a device: held or refused (`toNobody`).
    func send(_ draft: MessageDraft, _ snapshot: RecipientsSnapshot) async throws(RelayError) -> IngestReceipt {
        let (request, onlyApp, options, extras, time, messageID) = draft.parts
        let recipients = snapshot.recipients
        if recipients.isEmpty {
            return try await toNobody(draft)
        }
        let content = MessageContent(
            messageID: messageID,
            conversationID: request.conversation,
            senderID: request.from.id,
            senderName: request.from.name,
            text: request.text,
            sentAt: time,
            title: extras.title,
            data: extras.data
        )

        let situation = try await messageSituation(
            recipients,
            messageID: messageID,
            conversation: request.conversation,
            at: time
        )
        let routes = planner.messageRoutes(recipients, situation)
        let load = try load(routes, of: recipients, content: content, options: options)
        let (pushes, sendable, liveDevices, handovers, receipt) = (
            load.pushes, load.sendable, load.liveDevices, load.handovers, load.receipt
        )

        let message = context.messageRecord(
            request,
            id: messageID,
            at: time,
            expiresAt: time + context.configuration.messageRetention.milliseconds,
            // Kept only for a message a live channel may not acknowledge: its push then carries them.
            sealedPushOptions: liveDevices.isEmpty && handovers.isEmpty
                ? nil
                : context.sealPushOptions(
                    StoredPushOptions(options, title: extras.title, data: extras.data),
                    messageID: messageID
                )
        )
        guard
            let outcome = try await commit(
                receipt: receipt,
                key: Self.storedKey(message: request.idempotencyKey, app: onlyApp),
                message: message,
                pushes: pushes,
                sendable: sendable,
                handovers: handovers,
                deadlines: load.deadlines,
                recipientsVersion: snapshot.version
            )
        else {
            // The recipients this node kept changed since (another node, or this one, wrote to
            // the user's devices, presence or live channels): nothing was written.
            return try await sendAgain(draft)
        }
        if !outcome.duplicate { await accepted(draft, live: liveDevices, handovers: handovers) }
        return outcome
    }

    /// What a message's routes make: its sealed pushes (and those this node may send without a
    /// claim), the devices it goes to live, its handovers, and its receipt.
    struct MessageLoad {
        var pushes: [OutboxEntry] = []
        /// The pushes with their tokens, for this node's dispatcher to send without a claim.
        var sendable: [ClaimedPush] = []
        var liveDevices: [String] = []
        var handovers: [LiveHandover] = []
        /// The pushes' deadlines, from their apps' rules.
        var deadlines: [PushDeadline] = []
        var receipt: IngestReceipt
    }

    /// Seals a push for each device the planner routed to one (written skipped for a device that
    /// may not show notifications), and lists the others in the receipt with their reason.
    private func load(
        _ routes: [IngestPlanner.Route],
        of recipients: [Recipient],
        content: MessageContent,
        options: MessagePushOptions
    ) throws(RelayError) -> MessageLoad {
        var load = MessageLoad(receipt: IngestReceipt(id: content.messageID, pushes: [], skipped: []))
        for (recipient, route) in zip(recipients, routes) {
            let device = recipient.device
            switch route {
            case .live, .handover:
                if case .handover(let handover) = route {
                    load.handovers.append(handover)
                } else {
                    load.liveDevices.append(device.id)
                }
                load.receipt.skipped.append(.init(deviceID: device.id, reason: "delivered_live"))
            case .skip(let reason):
                load.receipt.skipped.append(.init(deviceID: device.id, reason: reason))
            case .push(let app):
                let push = context.permitted(
                    try context.messagePush(content, app: app, device: device, at: content.sentAt, options: options),
                    for: device
                )
                load.pushes.append(push)
                load.deadlines += context.deadlinePlanner.armed(push, app: app)
                guard push.state == .queued else {
                    load.receipt.skipped.append(.init(deviceID: device.id, reason: RelayContext.notificationsDenied))
                    continue
                }
                if let push = context.sendable(push, device: device, app: app) { load.sendable.append(push) }
                load.receipt.pushes.append(.init(pushID: push.pushID, deviceID: device.id))
            }
        }
        return load
    }

    /// After a message was written (not a repeat): this node's own handovers go out now (the
    /// others' nodes were woken by the store), and the devices on this node's channels get it.
    private func accepted(_ draft: MessageDraft, live liveDevices: [String], handovers: [LiveHandover]) async {
        if let node = directory.nodeID, handovers.contains(where: { $0.nodeID == node }) {
            await deliverHandovers()
        }
        context.metrics.messages.increment()
        let request = draft.request
        let message = LiveMessage(
            messageID: draft.id,
            conversation: request.conversation,
            from: request.from,
            text: request.text,
            sentAt: draft.time
        )
        for deviceID in liveDevices where !live.deliver(message, to: deviceID) {
            // The channel closed between the check and now: push instead.
            await pushAfterLiveDelivery(messageID: draft.id, deviceID: deviceID)
        }
    }

    /// What this node knows for routing a message to `recipients`: which are on screen in the
    /// conversation with their live channel here or on another node (read with the recipients),
    /// and their apps.
    private func messageSituation(
        _ recipients: [Recipient],
        messageID: String,
        conversation: String,
        at time: Int64
    ) async throws(RelayError) -> IngestPlanner.MessageSituation {
        let onScreenHere = Set(
            recipients.map(\.device.id).filter { live.isActive(deviceID: $0, in: conversation) }
        )
        return IngestPlanner.MessageSituation(
            messageID: messageID,
            conversation: conversation,
            now: time,
            onScreenHere: onScreenHere,
            elsewhere: directory.heldElsewhere(
                recipients.filter { !onScreenHere.contains($0.device.id) },
                conversation: conversation,
                now: time
            ),
            nodeID: directory.nodeID,
            ackDeadline: time + live.ackTimeout.milliseconds,
            apps: try await apps(of: recipients.map(\.device))
        )
    }

    /// The registered apps of `devices`, by id (from the app cache); an unknown one is left out.
    func apps(of devices: [DeviceRecord]) async throws(RelayError) -> [String: AppRecord] {
        var apps: [String: AppRecord] = [:]
        for id in Set(devices.map(\.appID)) {
            if let app = try await context.app(id: id) { apps[id] = app }
        }
        return apps
    }

    /// Commits an ingest once per key; a repeated key answers the first receipt; `nil` when the
    /// ingest was made for `recipientsVersion` and the recipients changed since (nothing written).
    ///
    /// Of `sendable` (pushes of `pushes` with their tokens), those this node's dispatcher has
    /// room for are written claimed by it and handed to it once committed: no claim statement
    /// takes them back from the store, and no other node is woken for them.
    func commit(
        receipt: IngestReceipt,
        key: String?,
        message: MessageRecord?,
        pushes: [OutboxEntry],
        sendable: [ClaimedPush] = [],
        handovers: [LiveHandover] = [],
        deadlines: [PushDeadline] = [],
        call: CallRecord? = nil,
        recipientsVersion: RecipientsVersion? = nil
    ) async throws(RelayError) -> IngestReceipt? {
        let encoded = Array(receipt.jsonText.utf8)
        let reserved = sendable.isEmpty ? nil : context.handOff?.reserve(sendable.map(\.entry))
        var ingest = Ingest(
            idempotencyKey: key,
            message: message,
            pushes: pushes,
            receipt: encoded,
            handovers: handovers,
            claim: reserved,
            recipientsVersion: recipientsVersion
        )
        ingest.deadlines = deadlines
        let change = IngestPlanner.change(ingest, call: call, sendable: sendable, skipped: receipt.skipped.count)
        switch try await context.commit(change).first {
        case .applied:
            return receipt
        case .duplicate:
            return try await firstReceipt(key: key)
        case .stale:
            return nil
        case .answered, nil:
            throw RelayError.unavailable.with(detail: "the store answered an ingest as no ingest")
        }
    }

    /// The receipt the first ingest under `key` answered, marked as a repeat: what a repeated
    /// key gets.
    func firstReceipt(key: String?) async throws(RelayError) -> IngestReceipt {
        context.metrics.duplicates.increment()
        // The first ingest committed before this one saw its key, so its receipt is there.
        var stored: [UInt8]?
        if let key { stored = try await context.storing { try await $0.receipt(idempotencyKey: key) } }
        guard let stored, var first = try? JSONDecoder().decode(IngestReceipt.self, from: Data(stored)) else {
            throw RelayError.unavailable.with(detail: "the first answer for this key is unreadable")
        }
        first.duplicate = true
        return first
    }

    // MARK: Reading back

    /// A message, for a device of its recipient (content-free policy, cut texts).
    public func message(id: String, for device: DeviceRecord) async throws(RelayError) -> MessageView {
        guard let message = try await context.storing({ try await $0.message(id: id) }),
            message.userID == device.userID
        else { throw RelayError.notFound.with(detail: "no message \(id) for this device") }
        let text: String
        do {
            let bytes = try context.masterKey.open(message.sealedText, context: RelayContext.messageContext(message.id))
                .copyBytes()
            text = String(decoding: bytes, as: UTF8.self)
        } catch {
            context.logger.error("cannot open a stored message", metadata: ["message": "\(id)"])
            throw RelayError.unavailable.with(detail: "the relay cannot read this message")
        }
        return MessageView(
            messageID: message.id,
            conversation: message.conversation,
            from: try context.openSender(message),
            text: text,
            sentAt: message.createdAt
        )
    }

    /// A push's state and history.
    public func pushStatus(id: String) async throws(RelayError) -> PushStatusView {
        guard let entry = try await context.storing({ try await $0.push(id: id) }) else {
            throw RelayError.notFound.with(detail: "no push \(id)")
        }
        let history = try await context.storing { try await $0.deliveryLog(pushID: id) }
        let receipts = try await context.storing { try await $0.receipts(pushID: id) }
        return PushStatusView(entry, history: history, receipts: receipts)
    }

    /// Deletes messages past retention, and idempotency keys and finished pushes older than it.
    /// Holds that ended first (their messages were never pushed: counted `expired`).
    public func purgeExpired() async throws(RelayError) -> (messages: Int, pushes: Int) {
        let time = context.clock.now()
        let ended = try await context.storing { try await $0.endHolds(now: time) }
        if ended > 0 { context.metrics.undeliverable(.expired).increment(by: ended) }
        return try await context.storing { store in
            try await store.deleteExpired(
                now: time,
                historyBefore: time - self.context.configuration.messageRetention.milliseconds
            )
        }
    }
}

/// A message checked and stamped, before it is made for its recipients: what every try at it
/// (the first, one after stale recipients, a hold) starts from.
struct MessageDraft: Sendable {
    var request: MessageRequest
    /// Only this app's devices, and its own idempotency keys (an app's API key).
    var app: String?
    var options: MessagePushOptions
    /// The per-message title and data, sealed with the message.
    var extras: (title: String?, data: [String: String]?)
    /// When it was accepted, milliseconds since the epoch.
    var time: Int64
    var id: String

    /// Its parts, for code that names them one by one.
    var parts:
        (
            request: MessageRequest, app: String?, options: MessagePushOptions,
            extras: (title: String?, data: [String: String]?), time: Int64, id: String
        )
    {
        (request, app, options, extras, time, id)
    }
}
