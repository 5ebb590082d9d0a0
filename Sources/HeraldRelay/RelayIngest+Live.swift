import HeraldRelayAPI
import HeraldStore

/// Live delivery across nodes: a message for a device whose channel another node holds is a
/// handover written with the message; that node delivers it (woken by the store) and settles it
/// on the acknowledgement; any node pushes it once its deadline passed unsettled.
extension RelayIngest {
    /// Delivers on this node's channels the messages handed to it; a message whose channel has
    /// closed since is pushed at once.
    public func deliverHandovers() async {
        guard let node = directory.nodeID else { return }
        let handovers: [LiveHandover]
        do {
            handovers = try await context.store.takeLiveHandovers(nodeID: node)
        } catch {
            context.logger.warning("cannot read live messages handed to this node", metadata: ["error": "\(error)"])
            return
        }
        for handover in handovers {
            var delivered = false
            do {
                if let message = try await context.store.message(id: handover.messageID) {
                    let content = try context.openContent(message)
                    delivered = live.deliver(
                        LiveMessage(
                            messageID: content.messageID,
                            conversation: content.conversationID,
                            from: Party(id: content.senderID, name: content.senderName),
                            text: content.text,
                            sentAt: content.sentAt
                        ),
                        to: handover.deviceID
                    )
                }
            } catch {
                context.logger.error("cannot read a message handed to this node", metadata: ["error": "\(error)"])
            }
            if !delivered { await unacknowledged(messageID: handover.messageID, deviceID: handover.deviceID) }
        }
    }

    /// Pushes the messages past their acknowledgement deadline that no node settled (their
    /// node died, or lost its channel without saying so); returns how many.
    @discardableResult
    public func pushOverdueHandovers() async -> Int {
        var pushed = 0
        while true {
            let overdue: [LiveHandover]
            do {
                overdue = try await context.store.takeOverdueLiveHandovers(now: context.clock.now(), limit: 100)
            } catch {
                context.logger.warning("cannot read overdue live messages", metadata: ["error": "\(error)"])
                return pushed
            }
            for handover in overdue {
                await pushAfterLiveDelivery(messageID: handover.messageID, deviceID: handover.deviceID)
            }
            pushed += overdue.count
            if overdue.count < 100 { return pushed }
        }
    }

    /// A live delivery ended without an acknowledgement (its timeout, its channel closed): pushed,
    /// unless its record was closed already (acknowledged, or pushed by a sweep).
    func unacknowledged(messageID: String, deviceID: String) async {
        guard await directory.settle(messageID: messageID, deviceID: deviceID) else { return }
        await pushAfterLiveDelivery(messageID: messageID, deviceID: deviceID)
    }

    /// Queues the push for a message a device did not acknowledge on its live channel (at most
    /// once per message and device), with the message's push options, its expiration counted
    /// from the message's acceptance: the push a direct one would have been. A device without
    /// the notification permission gets it written as skipped.
    func pushAfterLiveDelivery(messageID: String, deviceID: String) async {
        do {
            guard let message = try await context.store.message(id: messageID),
                let device = try await context.store.device(id: deviceID),
                context.isPushable(device), device.messagingToken != nil,
                let app = try await context.app(id: device.appID)
            else { return }
            let stored = try context.openPushOptions(message)
            var content = try context.openContent(message)
            content.title = stored.title
            content.data = stored.data
            let entry = context.permitted(
                try context.messagePush(
                    content,
                    app: app,
                    device: device,
                    at: context.clock.now(),
                    options: stored.options,
                    acceptedAt: message.createdAt
                ),
                for: device
            )
            let ingest = Ingest(
                idempotencyKey: "live-fallback:\(messageID):\(deviceID)",
                message: nil,
                pushes: [entry],
                receipt: []
            )
            var change = IngestPlanner.change(ingest, call: nil, sendable: [], skipped: 0)
            if entry.state == .queued {
                let line = RelayEffect.log(
                    "live message not acknowledged: pushed instead",
                    ["device": deviceID, "push": entry.pushID]
                )
                change.effectsWhenApplied.append(line)
            }
            try await context.commit(change)
        } catch {
            context.logger.error(
                "cannot push a message the live channel did not deliver",
                metadata: ["error": "\(error)"]
            )
        }
    }
}
