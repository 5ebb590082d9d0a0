import HeraldRelayAPI
public import HeraldStore
import Metrics

/// A chat's shown events over the live channel: the customer's apps in the foreground see the
/// agent's line as it is recorded, not only when they open, resync or reconnect.
///
/// No acknowledgement and no push fallback: the chat's disconnect and first-push timers stay its
/// push path, and a frame that is lost (the channel dropped, another node missed the notice)
/// leaves a gap in the positions the app fills with
/// `GET /v1/chats/{conversation}/transcript?after=`. With several nodes, the node that recorded
/// the event sends it on its own channels and announces it (ids only) to the nodes holding the
/// customer's other channels, which read it from the transcript and send it on theirs.
extension RelayTranscripts {
    /// Sends `event` to every device of `userID` with a channel open here, except those
    /// disconnected from the chat (they are on the push path), and announces it to the other
    /// nodes holding a channel of those devices; returns the devices it went to here.
    @discardableResult
    func sendLive(
        conversation: String,
        _ event: TranscriptEventView,
        to userID: String,
        except disconnected: Set<String>
    ) async -> [String] {
        // One node and no channel open: nobody to send to, and no read to make.
        guard live.openCount > 0 || directory.nodeID != nil else { return [] }
        guard let recipients = await liveRecipients(of: userID, except: disconnected) else { return [] }
        let elsewhere = directory.nodesElsewhere(recipients, now: context.clock.now())
        if !elsewhere.isEmpty {
            await directory.announceChatEvent(
                ChatEventNotice(conversation: conversation, position: event.position),
                to: elsewhere
            )
        }
        return sendHere(conversation: conversation, event, to: recipients)
    }

    /// Sends the event another node announced on the channels held here of the chat's customer,
    /// but those disconnected from the chat; returns the devices it went to.
    @discardableResult
    public func deliverAnnounced(_ notice: ChatEventNotice) async -> [String] {
        guard live.openCount > 0 else { return [] }
        do {
            let events = try await context.store.transcript(
                conversation: notice.conversation,
                after: notice.position - 1
            )
            // Gone (the chat was purged) or not one a channel shows: nothing to send.
            guard let event = events.first(where: { $0.position == notice.position }), event.fromAgent,
                !context.configuration.chat.filteredTypes.contains(event.type)
            else { return [] }
            let disconnected = try await context.store.disconnects(conversation: notice.conversation)
            guard
                let recipients = await liveRecipients(
                    of: event.userID,
                    except: Set(disconnected.map(\.deviceID))
                )
            else { return [] }
            return sendHere(conversation: notice.conversation, try view(event), to: recipients)
        } catch {
            // The app finds the event at its next resync.
            context.logger.warning(
                "cannot read a chat event another node announced",
                metadata: ["error": "\(error)"]
            )
            return []
        }
    }

    /// The customer's devices but those disconnected from the chat; `nil` when they cannot be
    /// read (logged: the event is recorded, the app finds it at its next resync).
    private func liveRecipients(of userID: String, except disconnected: Set<String>) async -> [Recipient]? {
        do {
            return try await context.store.recipients(userID: userID).filter { !disconnected.contains($0.device.id) }
        } catch {
            context.logger.warning(
                "cannot read the chat's devices for the live channel",
                metadata: ["error": "\(error)"]
            )
            return nil
        }
    }

    /// Sends the frame on the channels of `recipients` held here.
    private func sendHere(conversation: String, _ event: TranscriptEventView, to recipients: [Recipient]) -> [String] {
        var sent: [String] = []
        for recipient in recipients
        where live.send(.chatEvent(conversation: conversation, event: event), to: recipient.device.id) {
            sent.append(recipient.device.id)
        }
        if !sent.isEmpty { Counter(label: "herald_relay_chat_events_live_total").increment(by: sent.count) }
        return sent
    }
}
