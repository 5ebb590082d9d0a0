import HeraldRelayAPI
import HeraldStore
import Metrics

/// A chat's shown events over the live channel: the customer's apps in the foreground see the
/// agent's line as it is recorded, not only when they open, resync or reconnect.
///
/// No acknowledgement and no push fallback: the chat's disconnect and first-push timers stay its
/// push path, and a frame that is lost (the channel dropped, another node holds it) leaves a gap
/// in the positions the app fills with `GET /v1/chats/{conversation}/transcript?after=`.
/// Only channels this node holds get the frame.
extension RelayTranscripts {
    /// Sends `event` to every device of `userID` with a channel open here, except those
    /// disconnected from the chat (they are on the push path); returns the devices it went to.
    @discardableResult
    func sendLive(
        conversation: String,
        _ event: TranscriptEventView,
        to userID: String,
        except disconnected: Set<String>
    ) async -> [String] {
        guard live.openCount > 0 else { return [] }
        let recipients: [Recipient]
        do {
            recipients = try await context.store.recipients(userID: userID)
        } catch {
            // The event is recorded: the app finds it at its next resync.
            context.logger.warning(
                "cannot read the chat's devices for the live channel",
                metadata: ["error": "\(error)"]
            )
            return []
        }
        var sent: [String] = []
        for recipient in recipients where !disconnected.contains(recipient.device.id) {
            if live.send(.chatEvent(conversation: conversation, event: event), to: recipient.device.id) {
                sent.append(recipient.device.id)
            }
        }
        if !sent.isEmpty { Counter(label: "herald_relay_chat_events_live_total").increment(by: sent.count) }
        return sent
    }
}
