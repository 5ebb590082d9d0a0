import Foundation
import HeraldCrypto
public import HeraldRelayAPI
public import HeraldStore
import Synchronization

// A chat in the background: the delayed first push, its re-arming after a restart, and the
// transcript push itself.
extension RelayTranscripts {
    /// Re-arms the delayed first pushes a restart dropped (their timers lived in memory), or
    /// another node armed (it may die before they fire): each device still disconnected from a
    /// chat, with unfiltered agent events since and no push yet, gets its push when the delay that
    /// began with the first of those events ends, at once if it already has. A timer already
    /// armed here is kept.
    public func resumeChatPushes() async {
        do {
            let delay = context.configuration.chat.firstPushDelay.milliseconds
            for disconnect in try await context.store.pendingDisconnects() {
                let events = try await context.store.transcript(
                    conversation: disconnect.conversation,
                    after: disconnect.position
                )
                guard
                    let first = events.first(where: {
                        $0.fromAgent && !context.configuration.chat.filteredTypes.contains($0.type)
                    })
                else { continue }
                scheduleFirstPush(
                    conversation: disconnect.conversation,
                    deviceID: disconnect.deviceID,
                    at: first.at + delay
                )
            }
        } catch {
            context.logger.error("cannot re-arm the chat pushes waiting at start", metadata: ["error": "\(error)"])
        }
    }

    /// Pushes at `deadline` (milliseconds since the epoch; by default `firstPushDelay` from now)
    /// unless cancelled first; a timer already armed for the device and chat is kept.
    func scheduleFirstPush(conversation: String, deviceID: String, at deadline: Int64? = nil) {
        let deadline = deadline ?? context.clock.now() + context.configuration.chat.firstPushDelay.milliseconds
        timers.schedule(.firstPush(conversation: conversation, deviceID: deviceID), at: deadline) { [weak self] in
            _ = await self?.pushTranscript(conversation: conversation, deviceID: deviceID, onlyFirst: true)
        }
    }

    func cancelFirstPush(conversation: String, deviceID: String) {
        timers.cancel(.firstPush(conversation: conversation, deviceID: deviceID))
    }

    /// Pushes the agent lines since the device disconnected (sealed, as a message it can also
    /// fetch by id), and marks its first push sent. Nothing when the device came back meanwhile,
    /// nor, for a first push (`onlyFirst`), when it was already sent.
    ///
    /// Several relay nodes may fire the same first push (each arms a timer for a pending
    /// disconnect it sees): it is written once, under one idempotency key per device, chat and
    /// last event, and after it no other node's timer pushes again.
    func pushTranscript(conversation: String, deviceID: String, onlyFirst: Bool = false) async -> IngestReceipt.Push? {
        do {
            guard
                let disconnect = try await context.store.disconnects(conversation: conversation).first(where: {
                    $0.deviceID == deviceID
                }), !(onlyFirst && disconnect.pushed),
                let device = try await context.store.device(id: deviceID), context.isPushable(device),
                device.messagingToken != nil, let app = try await context.app(id: device.appID)
            else { return nil }
            // An app ordered by the customer's wait needs the transcript before the disconnect
            // too: the customer's question often came before the app went to the background.
            let byWait = app.queueOrder == .customerWait
            let filtered = context.configuration.chat.filteredTypes
            let transcript = try await context.store.transcript(
                conversation: conversation,
                after: byWait ? 0 : disconnect.position
            )
            let events = transcript.filter {
                $0.position > disconnect.position && $0.fromAgent && !filtered.contains($0.type)
            }
            guard let lastEvent = events.last else { return nil }
            var options = MessagePushOptions()
            // The agent event this push is the first to bring: the first since the disconnect
            // for the first push, the newest for a later one (the earlier ones were pushed).
            if byWait, let answer = disconnect.pushed ? events.last : events.first {
                options.waitingSince = CustomerWait.since(in: transcript, before: answer.position, ignoring: filtered)
            }
            var lines: [(author: Party, text: String)] = []
            for event in events.suffix(context.configuration.chat.maximumLines) {
                let (author, text) = try open(event)
                lines.append((author, text.isEmpty ? event.type : text))
            }
            let last = try context.openAuthor(lastEvent)
            let time = context.clock.now()
            let messageID = TimeOrderedID.make(milliseconds: time)
            let text = Self.pushText(lines, sender: last)
            let message = MessageRecord(
                id: messageID,
                userID: device.userID,
                conversation: conversation,
                sealedSender: context.sealSender(last, messageID: messageID),
                sealedText: context.masterKey.seal(
                    SecureBytes(copying: Array(text.utf8)),
                    context: RelayContext.messageContext(messageID)
                ),
                createdAt: time,
                expiresAt: time + context.configuration.messageRetention.milliseconds
            )
            let content = MessageContent(
                messageID: messageID,
                conversationID: conversation,
                senderID: last.id,
                senderName: last.name,
                text: text,
                sentAt: time
            )
            let entry = context.permitted(
                try context.messagePush(content, app: app, device: device, at: time, options: options),
                for: device
            )
            var ingest = Ingest(
                idempotencyKey: "chat:\(conversation):\(deviceID):\(lastEvent.position)",
                message: message,
                pushes: [entry],
                receipt: []
            )
            ingest.deadlines = context.deadlinePlanner.armed(entry, app: app)
            let change = IngestPlanner.change(ingest, call: nil, sendable: [], skipped: 0)
            guard try await context.commit(change) == [.applied] else { return nil }
            try await context.commit(
                RelayChange(writes: [.markDisconnectPushed(deviceID: deviceID, conversation: conversation)])
            )
            guard entry.state == .queued else { return nil }
            return IngestReceipt.Push(pushID: entry.pushID, deviceID: deviceID)
        } catch {
            context.logger.error("cannot push a chat's transcript", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
