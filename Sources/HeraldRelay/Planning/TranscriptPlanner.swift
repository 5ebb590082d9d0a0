import HeraldStore

/// A transcript event's change and where it goes once appended. Pure: `RelayTranscripts` seals
/// the event, commits the append, reads the disconnected devices and carries out the deliveries.
enum TranscriptPlanner {
    /// What becomes of one disconnected device of the event's user.
    enum Delivery: Sendable, Equatable {
        /// A push with the transcript now: its first push since the disconnect went already, or
        /// there is no delay before a first push.
        case pushNow(deviceID: String)
        /// The first push since the disconnect, after the delay (later events join it).
        case firstPushLater(deviceID: String)
    }

    /// The append of a sealed event at the conversation's next position; an ended chat refuses it.
    static func append(_ event: TranscriptEvent, ended: RelayError) -> RelayChange {
        RelayChange(writes: [.work(.appendTranscript(event))], refusalWhenConflict: ended)
    }

    /// Whether an event reaches nobody: the customer's own events, and the types the relay is
    /// configured to keep from the customer's devices.
    static func isFiltered(type: String, fromAgent: Bool, filteredTypes: Set<String>) -> Bool {
        !fromAgent || filteredTypes.contains(type)
    }

    /// The deliveries to the disconnected devices that are the user's (`userDevices`), in the
    /// order of `disconnects`.
    static func deliveries(
        _ disconnects: [ChatDisconnect],
        userDevices: Set<String>,
        firstPushDelay: Duration
    ) -> [Delivery] {
        disconnects.filter { userDevices.contains($0.deviceID) }.map { disconnect in
            disconnect.pushed || firstPushDelay == .zero
                ? .pushNow(deviceID: disconnect.deviceID) : .firstPushLater(deviceID: disconnect.deviceID)
        }
    }

    /// A device's disconnect with the events that report it; once applied, the webhook
    /// dispatcher woken if there are any.
    static func saveDisconnect(_ disconnect: ChatDisconnect, events: [WebhookEvent]) -> RelayChange {
        RelayChange(
            writes: [.saveDisconnect(disconnect, events: events)],
            effectsWhenApplied: events.isEmpty ? [] : [.wakeWebhooks]
        )
    }

    /// The device is back: its disconnect as read removed with the events that report it; once
    /// applied, the webhook dispatcher woken if there are any.
    static func removeDisconnect(_ disconnect: ChatDisconnect, events: [WebhookEvent]) -> RelayChange {
        RelayChange(
            writes: [.removeDisconnect(disconnect, events: events)],
            effectsWhenApplied: events.isEmpty ? [] : [.wakeWebhooks]
        )
    }
}
