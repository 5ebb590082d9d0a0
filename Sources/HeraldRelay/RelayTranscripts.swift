import Foundation
import HeraldCrypto
public import HeraldRelayAPI
public import HeraldStore
import Synchronization

/// The relay's transcripts part: chat events appended to a transcript (sealed at rest), a
/// device's disconnect from and return to a chat, transcript reads, and the pushes that follow a
/// chat whose app is in the background, including the delayed first push and its re-arming
/// after a restart.
///
/// The first pushes waiting out their delay are the relay's `timers`.
public final class RelayTranscripts: Sendable {
    let context: RelayContext
    /// This node's live channels: a shown event goes to the customer's apps in the foreground.
    let live: LiveChannels
    /// The channels other nodes hold: a shown event is announced to them.
    let directory: any LiveSessionDirectory
    /// Where first pushes wait for their delay, by device and chat.
    let timers: RelayTimers

    init(context: RelayContext, live: LiveChannels, directory: any LiveSessionDirectory, timers: RelayTimers) {
        self.context = context
        self.live = live
        self.directory = directory
        self.timers = timers
    }

    /// Appends an event to a chat's transcript and pushes it to the customer's devices that are
    /// disconnected from the chat: after `firstPushDelay` for the first event since the
    /// disconnect, at once for later ones; filtered types and the customer's own events never.
    public func chatEvent(
        conversation: String,
        _ request: ChatEventRequest
    ) async throws(RelayError)
        -> ChatEventReceipt
    {
        try context.configuration.check(conversation, "conversation", pattern: .identifier)
        try context.configuration.check(request.to, "to", pattern: .identifier)
        try context.configuration.check(request.type, "type", pattern: .identifier)
        try context.configuration.check(request.from.id, "from.id", pattern: .identifier)
        try context.configuration.checkText(request.from.name, "from.name")
        let text = request.text ?? ""
        guard text.utf8.count <= context.configuration.maximumTextBytes else {
            throw .invalidField("text", "is longer than \(context.configuration.maximumTextBytes) bytes")
        }
        if request.type == "Message.Text", text.isEmpty {
            throw .invalidField("text", "must not be empty for Message.Text")
        }
        let time = context.clock.now()
        try await refuseIfEnded(conversation, at: time)
        let fromAgent = request.fromAgent ?? true
        let event = TranscriptEvent(
            conversation: conversation,
            userID: request.to,
            type: request.type,
            sealedAuthor: context.sealAuthor(request.from, conversation: conversation, at: time),
            fromAgent: fromAgent,
            sealedText: [],
            at: time
        )
        let append = TranscriptPlanner.append(
            sealed(event, text: text, authorID: request.from.id),
            // Ended between the check above and the append (by the backend or the janitor).
            ended: Self.ended(conversation)
        )
        guard case .answered(.position(let position)) = try await context.commit(append).first else {
            throw RelayError.unavailable.with(detail: "the store answered an append without a position")
        }
        let filtered = TranscriptPlanner.isFiltered(
            type: request.type,
            fromAgent: fromAgent,
            filteredTypes: context.configuration.chat.filteredTypes
        )
        var receipt = ChatEventReceipt(position: position, pushes: [], scheduled: [], filtered: filtered)
        if filtered { return receipt }
        let disconnected = try await context.storing { try await $0.disconnects(conversation: conversation) }
        await sendLive(
            conversation: conversation,
            TranscriptEventView(
                position: position,
                type: request.type,
                from: request.from,
                fromAgent: fromAgent,
                text: text,
                at: time
            ),
            to: request.to,
            except: Set(disconnected.map(\.deviceID))
        )
        try await deliver(to: disconnected, of: request.to, conversation: conversation, receipt: &receipt)
        return receipt
    }

    /// Pushes the transcript to the disconnected devices of `userID`, now or after the first
    /// push's delay (`TranscriptPlanner.deliveries`), and notes each in the receipt.
    private func deliver(
        to disconnected: [ChatDisconnect],
        of userID: String,
        conversation: String,
        receipt: inout ChatEventReceipt
    ) async throws(RelayError) {
        var userDevices: Set<String> = []
        for disconnect in disconnected {
            let device = try await context.storing { try await $0.device(id: disconnect.deviceID) }
            if device?.userID == userID { userDevices.insert(disconnect.deviceID) }
        }
        let deliveries = TranscriptPlanner.deliveries(
            disconnected,
            userDevices: userDevices,
            firstPushDelay: context.configuration.chat.firstPushDelay
        )
        for delivery in deliveries {
            switch delivery {
            case .pushNow(let deviceID):
                if let push = await pushTranscript(conversation: conversation, deviceID: deviceID) {
                    receipt.pushes.append(push)
                }
            case .firstPushLater(let deviceID):
                scheduleFirstPush(conversation: conversation, deviceID: deviceID)
                receipt.scheduled.append(deviceID)
            }
        }
    }

    // MARK: Chat lifecycle

    /// Why an event for an ended chat is refused (409), rather than starting a new chat under the
    /// same id: a contact center's conversation id names one interaction (a GMS chat session, a
    /// CXone contact), and positions, disconnects and the purge all hang on it. Reusing it would
    /// append a new interaction to a transcript on its way out; the backend opens a new
    /// conversation id instead.
    private static func ended(_ conversation: String) -> RelayError {
        RelayError.conflict.with(detail: "the chat \(conversation) has ended; start a new conversation")
    }

    /// Refuses an event for a chat that ended, or that has been idle for `idleEnd` (which ends it
    /// now, at the time it became idle, without waiting for the janitor).
    private func refuseIfEnded(_ conversation: String, at time: Int64) async throws(RelayError) {
        var lifecycle = try await lifecycle(conversation)
        for action in lifecycle.handle(.event(at: time)) {
            try await perform(action, conversation)
        }
    }

    /// The chat's lifecycle as the store has it now.
    private func lifecycle(_ conversation: String) async throws(RelayError) -> ChatLifecycle {
        let chat = try await context.storing { try await $0.chat(conversation: conversation) }
        return ChatLifecycle(chat, idleEnd: context.configuration.chat.idleEnd.milliseconds)
    }

    /// Carries out a lifecycle action; returns the end time it answers, if it answers one.
    @discardableResult
    private func perform(_ action: ChatLifecycle.Action, _ conversation: String) async throws(RelayError) -> Int64? {
        switch action {
        case .append:
            // The caller appends: the store refuses the event if the chat ended meanwhile.
            return nil
        case .recordEnd(let time):
            // An ended chat keeps its first end: a concurrent end changes nothing.
            try await context.commit(RelayChange(writes: [.endChat(conversation: conversation, at: time)]))
            return nil
        case .refuseEnded:
            throw Self.ended(conversation)
        case .answerEnded(let time):
            return time
        case .answerUnknown:
            throw RelayError.notFound.with(detail: "no chat \(conversation)")
        }
    }

    /// Ends a chat (`POST /v1/chats/{conversation}/end`): it takes no more events, and retention
    /// purges its transcript and disconnects `messageRetention` after the end. Ending an ended
    /// chat answers its first end (a backend may retry); an unknown one is `notFound`.
    public func endChat(conversation: String) async throws(RelayError) -> ChatEndReceipt {
        try context.configuration.check(conversation, "conversation", pattern: .identifier)
        var lifecycle = try await lifecycle(conversation)
        var answered: Int64?
        for action in lifecycle.handle(.end(at: context.clock.now())) {
            answered = try await perform(action, conversation) ?? answered
        }
        // Another end may have been recorded first: the store's is the one that stands.
        let stored = try await context.storing { try await $0.chat(conversation: conversation) }
        guard let endedAt = stored?.endedAt ?? answered else {
            throw RelayError.notFound.with(detail: "no chat \(conversation)")
        }
        return ChatEndReceipt(
            conversation: conversation,
            endedAt: endedAt,
            purgeAt: endedAt + context.configuration.messageRetention.milliseconds
        )
    }

    /// The janitor's part for chats: ends those idle for `idleEnd`, and deletes those that ended
    /// more than `messageRetention` ago with their transcripts and disconnects. Returns how many
    /// ended and how many went.
    public func purgeChats() async throws(RelayError) -> (ended: Int, deleted: Int) {
        let time = context.clock.now()
        let idle = context.configuration.chat.idleEnd.milliseconds
        let retention = context.configuration.messageRetention.milliseconds
        return try await context.storing { store in
            let ended = try await store.endIdleChats(now: time, idle: idle)
            var deleted = 0
            // The store deletes in batches; a long backlog takes several.
            while case let batch = try await store.deleteEndedChats(endedBefore: time - retention + 1), batch > 0 {
                deleted += batch
            }
            return (ended, deleted)
        }
    }

    /// Seals a transcript event's text at rest (bound to the conversation, the event's time and
    /// its author: the position is not known before the store gives it).
    private func sealed(_ event: TranscriptEvent, text: String, authorID: String) -> TranscriptEvent {
        var event = event
        event.sealedText = context.masterKey.seal(
            SecureBytes(copying: Array(text.utf8)),
            context: Self.sealingContext(event, authorID: authorID)
        )
        return event
    }

    /// A stored event's author and text (an empty text when it does not open); `unavailable`
    /// when the author does not open.
    /// The text of a transcript push. The notification's title is the push's sender (the last
    /// line's author): lines all of that author are the text as written, or the sender would
    /// show twice ("Dana: Dana: Hello"); lines of several authors each say whose they are.
    static func pushText(_ lines: [(author: Party, text: String)], sender: Party) -> String {
        let oneAuthor = lines.allSatisfy { $0.author.id == sender.id && $0.author.name == sender.name }
        return lines.map { oneAuthor ? $0.text : $0.author.name + ": " + $0.text }.joined(separator: "\n")
    }

    func open(_ event: TranscriptEvent) throws(RelayError) -> (author: Party, text: String) {
        let author = try context.openAuthor(event)
        let opened = try? context.masterKey.open(
            event.sealedText,
            context: Self.sealingContext(event, authorID: author.id)
        )
        guard let bytes = opened?.copyBytes() else { return (author, "") }
        return (author, String(decoding: bytes, as: UTF8.self))
    }

    /// What a transcript event's text is sealed to (see `sealed`).
    private static func sealingContext(_ event: TranscriptEvent, authorID: String) -> String {
        "herald-transcript:\(event.conversation):\(event.at):\(authorID)"
    }

    /// The app goes to the background, having seen `transcriptPosition`.
    public func chatDisconnect(
        device: DeviceRecord,
        conversation: String,
        _ request: ChatDisconnectRequest
    )
        async throws(RelayError)
    {
        try context.configuration.check(conversation, "conversation", pattern: .identifier)
        guard request.transcriptPosition >= 0 else { throw .invalidField("transcript_position", "must be 0 or more") }
        let disconnect = ChatDisconnect(
            deviceID: device.id,
            conversation: conversation,
            position: request.transcriptPosition,
            at: context.clock.now()
        )
        let events = try await chatWebhookEvents(.chatCustomerOffline, device: device, disconnect: disconnect)
        try await context.commit(TranscriptPlanner.saveDisconnect(disconnect, events: events))
    }

    /// The app is back: no more pushes for this chat (a pending first push is cancelled), and
    /// the events it missed since it disconnected.
    public func chatConnect(device: DeviceRecord, conversation: String) async throws(RelayError) -> TranscriptView {
        try context.configuration.check(conversation, "conversation", pattern: .identifier)
        cancelFirstPush(conversation: conversation, deviceID: device.id)
        let app = try await context.app(id: device.appID)
        let time = context.clock.now()
        var disconnect: ChatDisconnect?
        // The disconnect as read, removed only if it is still that one: one written in between
        // (the app left again) is read again.
        repeat {
            let disconnects = try await context.storing { try await $0.disconnects(conversation: conversation) }
            disconnect = disconnects.first { $0.deviceID == device.id }
            guard let found = disconnect else { break }
            let events =
                app.map { app in
                    WebhookEvent.reporting(
                        app: app,
                        .chatCustomerBack,
                        orderingKey: "conversation:" + conversation,
                        data: ChatWebhookData(device: device, disconnect: found),
                        at: time
                    )
                } ?? []
            let change = TranscriptPlanner.removeDisconnect(found, events: events)
            if try await context.commit(change) == [.applied] { break }
        } while true
        return try await transcript(conversation: conversation, after: disconnect?.position ?? 0, for: device)
    }

    /// The events that tell the app's backend its customer left a chat or came back.
    private func chatWebhookEvents(
        _ type: WebhookEventType,
        device: DeviceRecord,
        disconnect: ChatDisconnect
    )
        async throws(RelayError) -> [WebhookEvent]
    {
        guard let app = try await context.app(id: device.appID) else { return [] }
        return WebhookEvent.reporting(
            app: app,
            type,
            orderingKey: "conversation:" + disconnect.conversation,
            data: ChatWebhookData(device: device, disconnect: disconnect),
            at: disconnect.at
        )
    }

    /// Every event after `position` (the resync), for a device of the chat's customer.
    public func transcript(
        conversation: String,
        after position: Int,
        for device: DeviceRecord
    )
        async throws(RelayError) -> TranscriptView
    {
        let events = try await context.storing { try await $0.transcript(conversation: conversation, after: position) }
        guard events.allSatisfy({ $0.userID == device.userID }) else {
            throw RelayError.forbidden.with(detail: "the chat is another user's")
        }
        var views: [TranscriptEventView] = []
        for event in events { views.append(try view(event)) }
        return TranscriptView(conversation: conversation, events: views)
    }

    /// The event as the customer's device reads it: its author and text opened.
    func view(_ event: TranscriptEvent) throws(RelayError) -> TranscriptEventView {
        let (author, text) = try open(event)
        return TranscriptEventView(
            position: event.position,
            type: event.type,
            from: author,
            fromAgent: event.fromAgent,
            text: text,
            at: event.at
        )
    }
}

/// `chat.customer_offline` and `chat.customer_back`'s `data`: ids and the transcript position the
/// device had seen when it left.
struct ChatWebhookData: Encodable {
    var conversation: String
    var deviceID: String
    var userID: String
    var transcriptPosition: Int
    /// When the device left the chat, milliseconds since the epoch.
    var disconnectedAt: Int64

    init(device: DeviceRecord, disconnect: ChatDisconnect) {
        conversation = disconnect.conversation
        deviceID = device.id
        userID = device.userID
        transcriptPosition = disconnect.position
        disconnectedAt = disconnect.at
    }

    enum CodingKeys: String, CodingKey {
        case conversation
        case deviceID = "device_id"
        case userID = "user_id"
        case transcriptPosition = "transcript_position"
        case disconnectedAt = "disconnected_at"
    }
}
