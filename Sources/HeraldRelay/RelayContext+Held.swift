import HeraldCrypto
import HeraldRelayAPI
import HeraldStore

extension RelayContext {
    /// Pushes the messages held for `userID` to those of the user's devices that may take them
    /// (a token, a platform the relay pushes to, an app whose policy holds, within its hold),
    /// each message released once whichever node or device asks first. Called after a device of
    /// the user activated or got a token; a failure is logged and the messages stay held, for
    /// the next activation or token, until their hold ends.
    func releaseHeld(userID: String) async {
        let time = clock.now()
        do {
            let held = try await store.heldMessages(userID: userID, now: time)
            if held.isEmpty { return }
            let recipients = try await store.recipients(userID: userID)
            var releases: [HeldRelease] = []
            for message in held {
                guard let record = try await store.message(id: message.messageID) else { continue }
                var pushes: [OutboxEntry] = []
                var content: MessageContent?
                var stored: StoredPushOptions?
                for device in recipients.map(\.device) {
                    if let only = message.appID, only != device.appID { continue }
                    guard isPushable(device), device.messagingToken != nil, let app = try await app(id: device.appID),
                        UndeliverableRule.takes(
                            UndeliverablePolicy(app: app, default: configuration.undeliverable),
                            heldAt: message.heldAt,
                            heldUntil: message.heldUntil,
                            now: time
                        )
                    else { continue }
                    if content == nil {
                        stored = try openPushOptions(record)
                        content = try openContent(record, title: stored?.title, data: stored?.data)
                    }
                    guard let content, let stored else { continue }
                    let push = try messagePush(content, app: app, device: device, at: time, options: stored.options)
                    pushes.append(permitted(push, for: device))
                }
                if !pushes.isEmpty { releases.append(HeldRelease(messageID: message.messageID, pushes: pushes)) }
            }
            let released = Set(try await store.release(releases, now: time))
            if released.isEmpty { return }
            metrics.undeliverable(.released).increment(by: released.count)
            let queued = releases.filter { released.contains($0.messageID) }.flatMap(\.pushes)
                .count { $0.state == .queued }
            metrics.queued.increment(by: queued)
            logger.info("held messages released", metadata: ["messages": "\(released.count)", "pushes": "\(queued)"])
            accepted()
        } catch {
            logger.error("cannot release held messages", metadata: ["error": "\(error)"])
        }
    }

    /// A stored message's content, opened: for a push made after it was accepted (a held
    /// message's release, a live delivery not acknowledged).
    func openContent(
        _ message: MessageRecord,
        title: String? = nil,
        data: [String: String]? = nil
    ) throws
        -> MessageContent
    {
        let text = try masterKey.open(message.sealedText, context: Self.messageContext(message.id)).copyBytes()
        let sender = try openSender(message)
        return MessageContent(
            messageID: message.id,
            conversationID: message.conversation,
            senderID: sender.id,
            senderName: sender.name,
            text: String(decoding: text, as: UTF8.self),
            sentAt: message.createdAt,
            title: title,
            data: data
        )
    }

    /// A message as stored: its sender and text sealed, bound to its id.
    func messageRecord(
        _ request: MessageRequest,
        id: String,
        at time: Int64,
        expiresAt: Int64,
        sealedPushOptions: [UInt8]?
    ) -> MessageRecord {
        MessageRecord(
            id: id,
            userID: request.to,
            conversation: request.conversation,
            sealedSender: sealSender(request.from, messageID: id),
            sealedText: masterKey.seal(
                SecureBytes(copying: Array(request.text.utf8)),
                context: Self.messageContext(id)
            ),
            createdAt: time,
            expiresAt: expiresAt,
            sealedPushOptions: sealedPushOptions
        )
    }
}
