import HeraldRelayAPI
import HeraldStore

/// Where a message or a call goes on each of a user's devices: the rules, as data.
///
/// Pure: it takes the recipients as read, what this node knows of live channels and the apps, and
/// the time, and answers one `Route` per device, in the recipients' order (the receipt's order).
/// `RelayIngest` reads around it, seals what it routes to a push and commits.
struct IngestPlanner: Sendable {
    var configuration: RelayConfiguration

    /// What becomes of one device.
    enum Route: Sendable, Equatable {
        /// One sealed push, for the device's app.
        case push(AppRecord)
        /// Over this node's open live channel, acknowledged there (one node).
        case live
        /// Over a live channel, handed to the node holding it (this one or another), pushed if
        /// not acknowledged by its deadline.
        case handover(LiveHandover)
        /// No push; the receipt says why.
        case skip(String)
    }

    /// What a message is routed with besides its recipients.
    struct MessageSituation: Sendable {
        var messageID: String
        var conversation: String
        var now: Int64
        /// Devices on screen in the conversation with their live channel open on this node.
        var onScreenHere: Set<String>
        /// Devices on screen in the conversation with their channel on another node: that node.
        var elsewhere: [String: String]
        /// This node's id when nodes share the store (handovers), else `nil` (one node).
        var nodeID: String?
        /// When a live delivery not acknowledged is pushed instead.
        var ackDeadline: Int64
        /// The recipients' apps, by id; an app not here is not registered.
        var apps: [String: AppRecord]
    }

    /// Why a device gets no push of this kind, or `nil` if it gets one.
    func skipReason(for device: DeviceRecord, kind: OutboxKind) -> String? {
        guard configuration.platforms.contains(device.platform) else { return "platform_not_configured" }
        // Android has one FCM token for messages and calls alike.
        let voip = kind == .call && device.platform == .ios
        if (voip ? device.voipToken : device.messagingToken) != nil { return nil }
        if let dead = device.tokenDeadReason { return "token_dead: " + dead }
        return voip ? "no_voip_token" : "no_token"
    }

    /// A message's route on each recipient. A device on screen in the conversation with its
    /// channel open gets it live; else one without a usable token, one whose app shows the
    /// conversation (per device, or per user for apps that say so) or whose app is unknown gets
    /// nothing; the others get a push.
    func messageRoutes(_ recipients: [Recipient], _ situation: MessageSituation) -> [Route] {
        let conversation = situation.conversation
        // Apps whose presence policy is per user: one of the user's devices of that app active
        // in the conversation keeps the push from all of them.
        let activeApps = Set(
            recipients.filter { $0.presence?.isActive(in: conversation, at: situation.now) == true }
                .map(\.device.appID)
        )
        return recipients.map { recipient in
            let device = recipient.device
            let here = situation.onScreenHere.contains(device.id)
            if here || situation.elsewhere[device.id] != nil {
                guard let node = here ? situation.nodeID : situation.elsewhere[device.id] else { return .live }
                return .handover(
                    LiveHandover(
                        messageID: situation.messageID,
                        deviceID: device.id,
                        nodeID: node,
                        deadline: situation.ackDeadline
                    )
                )
            }
            if let reason = skipReason(for: device, kind: .message) { return .skip(reason) }
            if recipient.presence?.isActive(in: conversation, at: situation.now) == true {
                return .skip("active_in_conversation")
            }
            guard let app = situation.apps[device.appID] else { return .skip("app_not_registered") }
            if app.presencePolicy == .perUser, activeApps.contains(app.id) {
                return .skip("user_active_in_conversation")
            }
            return .push(app)
        }
    }

    /// A call's route on each device: a push, unless the device has no usable VoIP (iOS) or FCM
    /// (Android) token or its app is unknown. Calls ring whatever the presence.
    func callRoutes(_ devices: [DeviceRecord], apps: [String: AppRecord]) -> [Route] {
        devices.map { device in
            if let reason = skipReason(for: device, kind: .call) { return .skip(reason) }
            guard let app = apps[device.appID] else { return .skip("app_not_registered") }
            return .push(app)
        }
    }
}

extension IngestPlanner {
    /// The change that commits an ingest (a call's with its record): the write, and once it is
    /// applied the counts, the hand-off of the pushes written claimed by this node (`sendable`,
    /// those of `ingest.claim`) and the dispatchers' wake-up; the reserved room goes back if it
    /// is not applied.
    static func change(
        _ ingest: Ingest,
        call: CallRecord?,
        sendable: [ClaimedPush],
        skipped: Int
    ) -> RelayChange {
        var change = RelayChange(writes: [call.map { .acceptCall(ingest, call: $0) } ?? .accept(ingest)])
        // Pushes withheld from a device without the notification permission are written finished.
        let queued = ingest.pushes.count { $0.state == .queued }
        if queued > 0 { change.effectsWhenApplied.append(.count(.queued, queued)) }
        if skipped > 0 { change.effectsWhenApplied.append(.count(.skipped, skipped)) }
        if let claim = ingest.claim {
            change.effectsWhenApplied.append(.handOff(sendable, claim))
            change.effectsUnlessApplied.append(.releaseClaim(claim))
        }
        if ingest.queuesPushes { change.effectsWhenApplied.append(.wakeDispatchers) }
        if !ingest.deadlines.isEmpty { change.effectsWhenApplied.append(.wakeDeadlines) }
        return change
    }

    /// A message held for a user with no device (`StoreChange.hold`); once applied, counted as
    /// accepted and held, and logged.
    static func hold(_ ingest: Ingest, until: Int64, appID: String?, messageID: String) -> RelayChange {
        RelayChange(
            writes: [.hold(ingest, until: until, appID: appID)],
            effectsWhenApplied: [
                .count(.messages, 1), .count(.undeliverable(.held), 1),
                .log("message held: no device yet", ["message": messageID]),
            ]
        )
    }
}
