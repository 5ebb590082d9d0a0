import Foundation
import HeraldCrypto
public import HeraldRelayAPI
public import HeraldStore

/// Chat background semantics (seed 001, Genesys Mobile Services): how pushes follow a chat whose
/// app went to the background.
public struct ChatConfiguration: Sendable {
    /// How long after the first agent event following a disconnect the first push waits (GMS's
    /// `_client_timeout_notification`); zero pushes at once. Later events push at once.
    public var firstPushDelay: Duration = .seconds(30)
    /// Event types that never push (GMS's `_filtering_chat_events`).
    public var filteredTypes: Set<String> = ["Notice.TypingStarted", "Notice.TypingStopped"]
    /// The most transcript lines one push carries (the newest).
    public var maximumLines: Int = 5

    public init() {}
}

extension Relay {
    static func transcriptContext(_ conversation: String, _ position: Int) -> String {
        "herald-transcript:\(conversation):\(position)"
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
        try check(conversation, "conversation", pattern: .identifier)
        try check(request.to, "to", pattern: .identifier)
        try check(request.type, "type", pattern: .identifier)
        try check(request.from.id, "from.id", pattern: .identifier)
        try checkText(request.from.name, "from.name")
        let text = request.text ?? ""
        guard text.utf8.count <= configuration.maximumTextBytes else {
            throw .invalidField("text", "is longer than \(configuration.maximumTextBytes) bytes")
        }
        if request.type == "Message.Text", text.isEmpty {
            throw .invalidField("text", "must not be empty for Message.Text")
        }
        let time = now()
        let fromAgent = request.fromAgent ?? true
        let event = TranscriptEvent(
            conversation: conversation,
            userID: request.to,
            type: request.type,
            authorID: request.from.id,
            authorName: request.from.name,
            fromAgent: fromAgent,
            sealedText: [],
            at: time
        )
        let position = try await storing { try await self.store.appendTranscript(self.sealed(event, text: text)) }
        let filtered = !fromAgent || configuration.chat.filteredTypes.contains(request.type)
        var receipt = ChatEventReceipt(position: position, pushes: [], scheduled: [], filtered: filtered)
        if filtered { return receipt }
        let disconnected = try await storing { try await self.store.disconnects(conversation: conversation) }
        for disconnect in disconnected {
            guard let device = try await storing({ try await self.store.device(id: disconnect.deviceID) }),
                device.userID == request.to
            else { continue }
            if disconnect.pushed || configuration.chat.firstPushDelay == .zero {
                if let push = await pushTranscript(conversation: conversation, deviceID: device.id) {
                    receipt.pushes.append(push)
                }
            } else {
                scheduleFirstPush(conversation: conversation, deviceID: device.id)
                receipt.scheduled.append(device.id)
            }
        }
        return receipt
    }

    /// Seals a transcript event's text at rest (bound to the conversation and the event's time:
    /// the position is not known before the store gives it).
    private func sealed(_ event: TranscriptEvent, text: String) -> TranscriptEvent {
        var event = event
        event.sealedText = masterKey.seal(
            SecureBytes(copying: Array(text.utf8)),
            context: "herald-transcript:\(event.conversation):\(event.at):\(event.authorID)"
        )
        return event
    }

    private func open(_ event: TranscriptEvent) -> String {
        let context = "herald-transcript:\(event.conversation):\(event.at):\(event.authorID)"
        guard let bytes = try? masterKey.open(event.sealedText, context: context).copyBytes() else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The app goes to the background, having seen `transcriptPosition`.
    public func chatDisconnect(
        device: DeviceRecord,
        conversation: String,
        _ request: ChatDisconnectRequest
    )
        async throws(RelayError)
    {
        try check(conversation, "conversation", pattern: .identifier)
        guard request.transcriptPosition >= 0 else { throw .invalidField("transcript_position", "must be 0 or more") }
        let disconnect = ChatDisconnect(
            deviceID: device.id,
            conversation: conversation,
            position: request.transcriptPosition,
            at: now()
        )
        try await storing { try await self.store.saveDisconnect(disconnect) }
    }

    /// The app is back: no more pushes for this chat (a pending first push is cancelled), and
    /// the events it missed since it disconnected.
    public func chatConnect(device: DeviceRecord, conversation: String) async throws(RelayError) -> TranscriptView {
        try check(conversation, "conversation", pattern: .identifier)
        cancelFirstPush(conversation: conversation, deviceID: device.id)
        let disconnect = try await storing {
            try await self.store.removeDisconnect(deviceID: device.id, conversation: conversation)
        }
        return try await transcript(conversation: conversation, after: disconnect?.position ?? 0, for: device)
    }

    /// Every event after `position` (the resync), for a device of the chat's customer.
    public func transcript(
        conversation: String,
        after position: Int,
        for device: DeviceRecord
    )
        async throws(RelayError) -> TranscriptView
    {
        let events = try await storing { try await self.store.transcript(conversation: conversation, after: position) }
        guard events.allSatisfy({ $0.userID == device.userID }) else {
            throw RelayError.forbidden.with(detail: "the chat is another user's")
        }
        return TranscriptView(
            conversation: conversation,
            events: events.map { event in
                TranscriptEventView(
                    position: event.position,
                    type: event.type,
                    from: Party(id: event.authorID, name: event.authorName),
                    fromAgent: event.fromAgent,
                    text: open(event),
                    at: event.at
                )
            }
        )
    }

    // MARK: Pushes

    private func timerKey(_ conversation: String, _ deviceID: String) -> String { deviceID + "|" + conversation }

    /// Re-arms the delayed first pushes a restart dropped (their timers lived in memory): each
    /// device still disconnected from a chat, with unfiltered agent events since and no push yet,
    /// gets its push when the delay that began with the first of those events ends, at once if
    /// it already has.
    public func resumeChatPushes() async {
        do {
            let delay = configuration.chat.firstPushDelay.milliseconds
            for disconnect in try await store.pendingDisconnects() {
                let events = try await store.transcript(
                    conversation: disconnect.conversation,
                    after: disconnect.position
                )
                guard
                    let first = events.first(where: {
                        $0.fromAgent && !configuration.chat.filteredTypes.contains($0.type)
                    })
                else { continue }
                scheduleFirstPush(
                    conversation: disconnect.conversation,
                    deviceID: disconnect.deviceID,
                    at: first.at + delay
                )
            }
        } catch {
            logger.error("cannot re-arm the chat pushes waiting at start", metadata: ["error": "\(error)"])
        }
    }

    /// Pushes at `deadline` (milliseconds since the epoch; by default `firstPushDelay` from now)
    /// unless cancelled first; a timer already armed for the device and chat is kept.
    private func scheduleFirstPush(conversation: String, deviceID: String, at deadline: Int64? = nil) {
        let key = timerKey(conversation, deviceID)
        // The deadline is fixed now, not when the timer task first runs.
        let deadline = deadline ?? now() + configuration.chat.firstPushDelay.milliseconds
        let sleep = sleep
        chatTimers.withLock { timers in
            guard timers[key] == nil else { return }
            timers[key] = Task { [weak self] in
                try? await sleep(deadline)
                guard let self, !Task.isCancelled else { return }
                self.chatTimers.withLock { _ = $0.removeValue(forKey: key) }
                _ = await self.pushTranscript(conversation: conversation, deviceID: deviceID)
            }
        }
    }

    private func cancelFirstPush(conversation: String, deviceID: String) {
        chatTimers.withLock { $0.removeValue(forKey: timerKey(conversation, deviceID)) }?.cancel()
    }

    /// Pushes the agent lines since the device disconnected (sealed, as a message it can also
    /// fetch by id), and marks its first push sent. Nothing when the device came back meanwhile.
    func pushTranscript(conversation: String, deviceID: String) async -> IngestReceipt.Push? {
        do {
            guard
                let disconnect = try await store.disconnects(conversation: conversation).first(where: {
                    $0.deviceID == deviceID
                }),
                let device = try await store.device(id: deviceID), isPushable(device),
                device.messagingToken != nil, let app = try await app(id: device.appID)
            else { return nil }
            let events = try await store.transcript(conversation: conversation, after: disconnect.position)
                .filter { $0.fromAgent && !configuration.chat.filteredTypes.contains($0.type) }
            guard let last = events.last else { return nil }
            let lines = events.suffix(configuration.chat.maximumLines).map { event -> String in
                let text = open(event)
                return event.authorName + ": " + (text.isEmpty ? event.type : text)
            }
            let time = now()
            let messageID = TimeOrderedID.make(milliseconds: time)
            let text = lines.joined(separator: "\n")
            let message = MessageRecord(
                id: messageID,
                userID: device.userID,
                conversation: conversation,
                senderID: last.authorID,
                senderName: last.authorName,
                sealedText: masterKey.seal(
                    SecureBytes(copying: Array(text.utf8)),
                    context: Self.messageContext(messageID)
                ),
                createdAt: time,
                expiresAt: time + configuration.messageRetention * 1000
            )
            let content = MessageContent(
                messageID: messageID,
                conversationID: conversation,
                senderID: last.authorID,
                senderName: last.authorName,
                text: text,
                sentAt: time
            )
            let entry = try messagePush(content, app: app, device: device, at: time)
            let ingest = Ingest(
                idempotencyKey: "chat:\(conversation):\(deviceID):\(last.position)",
                message: message,
                pushes: [entry],
                receipt: []
            )
            guard try await store.accept(ingest) == .accepted else { return nil }
            try await store.markDisconnectPushed(deviceID: deviceID, conversation: conversation)
            relayMetrics.queued.increment()
            accepted()
            return IngestReceipt.Push(pushID: entry.pushID, deviceID: deviceID)
        } catch {
            logger.error("cannot push a chat's transcript", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
