import HeraldCrypto
import HeraldPush
import HeraldRelayAPI
import HeraldStore

// What an escalation does: the message again, to the same device at priority 10 or to the
// user's devices it did not reach, or the user rung as a call from its sender.
extension RelayDeadlines {
    /// The pushes `action` adds for `push` (a message's, to `device`), sealed for their devices;
    /// none for `notify` and `ring`, nor when the message is gone.
    func escalation(
        _ action: DeadlineAction,
        of push: OutboxEntry,
        device: DeviceRecord,
        at time: Int64
    ) async throws(RelayError) -> [OutboxEntry] {
        guard action == .resend || action == .otherDevices else { return [] }
        let messageID = push.subjectID
        guard let message = try await context.storing({ try await $0.message(id: messageID) }) else { return [] }
        let stored = try context.openPushOptions(message)
        let content: MessageContent
        do {
            content = try context.openContent(message, title: stored.title, data: stored.data)
        } catch {
            context.logger.error("cannot open a stored message's text", metadata: ["message": "\(message.id)"])
            throw RelayError.unavailable.with(detail: "the relay cannot read this message")
        }
        // Seen late is seen too late: the escalation does not wait for the phone's power budget.
        var options = stored.options
        options.priority = .immediate
        options.priorityRequested = true
        var targets: [DeviceRecord] = []
        if action == .resend {
            targets = [device]
        } else {
            let others = try await context.storing { try await $0.recipients(userID: device.userID) }.map(\.device)
                .filter { $0.id != device.id && context.isPushable($0) && $0.messagingToken != nil }
            let ids = others.map(\.id)
            let since = push.createdAt
            let reached = try await context.storing {
                try await $0.devicesSent(subjectID: messageID, since: since, among: ids)
            }
            targets = others.filter { !reached.contains($0.id) }
        }
        var entries: [OutboxEntry] = []
        for target in targets {
            guard let app = try await context.app(id: target.appID) else { continue }
            let entry = try context.messagePush(content, app: app, device: target, at: time, options: options)
            entries.append(context.permitted(entry, for: target))
        }
        return entries
    }

    /// Rings the user as a call from the message's sender, on the devices of `device`'s app; the
    /// call's id is made from the push's, so a second try (after a claim lapsed) rings nobody.
    /// Answers the call id, or nil when the message is gone.
    func ring(for push: OutboxEntry, device: DeviceRecord) async throws(RelayError) -> String? {
        let messageID = push.subjectID
        guard let message = try await context.storing({ try await $0.message(id: messageID) }) else { return nil }
        let sender = try context.openSender(message)
        let request = CallRequest(to: device.userID, from: sender, callID: "unseen-" + push.pushID)
        return try await ingest.send(call: request, app: device.appID).id
    }
}

/// The data of a `push.unseen` / `push.call_unreported` event: which push, whose device, what the
/// relay did (the pushes it added, the call it placed); ids and times only, never content.
struct DeadlineEventData: Encodable, Equatable {
    var pushID: String
    var deviceID: String
    var userID: String
    var action: DeadlineAction
    /// When the deadline was due, milliseconds since the epoch.
    var dueAt: Int64
    var pushes: [IngestReceipt.Push]
    var callID: String?

    init(deadline: PushDeadline, device: DeviceRecord, action: DeadlineAction, pushes: [OutboxEntry]) {
        pushID = deadline.pushID
        deviceID = device.id
        userID = device.userID
        self.action = action
        dueAt = deadline.dueAt
        self.pushes = pushes.filter { $0.state == .queued }.map {
            IngestReceipt.Push(pushID: $0.pushID, deviceID: $0.deviceID)
        }
        callID = nil
    }

    enum CodingKeys: String, CodingKey {
        case pushID = "push_id"
        case deviceID = "device_id"
        case userID = "user_id"
        case action
        case dueAt = "due_at"
        case pushes
        case callID = "call_id"
    }
}
