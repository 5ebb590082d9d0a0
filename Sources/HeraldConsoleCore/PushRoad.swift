public import HeraldPush
public import HeraldRelayAPI
public import HeraldStore

/// A push's whole road as the console's timeline draws it: accepted, sealed (sizes only),
/// claimed and sent (each attempt with its answer), retried with its reasons, the phone's
/// receipts, and the webhook events sent back; oldest first.
public struct PushRoad: Sendable {
    /// One step of the road.
    public struct Step: Sendable, Hashable {
        /// Milliseconds since the epoch.
        public var at: Int64
        /// Who acted: `backend`, `relay`, the push network's name, `phone`, `webhook`.
        public var actor: String
        public var title: String
        /// Facts without content: sizes, ids, reasons.
        public var detail: String?
        /// The stylesheet class of the step's marker (`ok`, `retry`, `bad`, `info`).
        public var tone: String
    }

    public var steps: [Step]

    /// The road of `status`, with what the outbox row tells of what was sent (`entry`, nil once
    /// purged) and the webhook events that report the push.
    public init(status: PushStatusView, entry: OutboxEntry?, webhooks: [StoredWebhookEvent]) {
        var steps: [Step] = []
        let network = entry?.payload.network
        let networkName = network.map(Self.name) ?? "the push network"
        var attempt = 0
        for event in status.history {
            switch event.state {
            case .queued where steps.isEmpty:
                steps.append(Step(at: event.at, actor: "relay", title: "accepted and queued", detail: nil, tone: "ok"))
                if let entry {
                    steps.append(
                        Step(
                            at: event.at,
                            actor: "relay",
                            title: "sealed for the device",
                            detail: Self.facts(entry.payload, collapsed: entry.collapseID != nil),
                            tone: "info"
                        )
                    )
                }
            case .queued:
                attempt += 1
                steps.append(
                    Step(
                        at: event.at,
                        actor: networkName,
                        title: "attempt \(attempt): back to the queue",
                        detail: event.reason.map { "reason: \($0)" },
                        tone: "retry"
                    )
                )
            case .sending:
                steps.append(Step(at: event.at, actor: "relay", title: "claimed and sent", detail: nil, tone: "info"))
            case .delivered:
                let id = status.apnsID.isEmpty ? nil : "apns-id \(status.apnsID)"
                steps.append(
                    Step(
                        at: event.at,
                        actor: networkName,
                        title: "accepted by \(networkName) after \(status.attempts) attempt(s)",
                        detail: id,
                        tone: "ok"
                    )
                )
            case .failed, .tokenDead, .expired, .skipped:
                steps.append(
                    Step(
                        at: event.at,
                        actor: event.state == .skipped || event.state == .expired ? "relay" : networkName,
                        title: Self.finalTitle(event.state),
                        detail: event.reason.map { "reason: \($0)" },
                        tone: "bad"
                    )
                )
            }
        }
        for receipt in status.receipts {
            steps.append(
                Step(
                    at: receipt.receivedAt,
                    actor: "phone",
                    title: "receipt: \(receipt.stage.rawValue)",
                    detail: receipt.failure.map { "failure: \($0.rawValue)" }
                        ?? "the phone's clock: \(receipt.deviceTime)",
                    tone: receipt.stage == .failed ? "bad" : "ok"
                )
            )
        }
        for stored in webhooks {
            let delivered = stored.deliveredAt.map { _ in "delivered" } ?? stored.state.rawValue
            steps.append(
                Step(
                    at: stored.event.createdAt,
                    actor: "webhook",
                    title: "webhook \(stored.event.type.rawValue)",
                    detail: "\(delivered), \(stored.attempts) attempt(s)"
                        + (stored.lastError.map { ", last error: \($0)" } ?? ""),
                    tone: stored.state == .failed ? "bad" : "info"
                )
            )
        }
        // Stable: steps of one instant keep the order they were told in.
        self.steps = steps.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }
            .map(\.element)
    }

    /// The network's name as operators say it.
    public static func name(_ network: PushNetwork) -> String {
        switch network {
        case .apns: "APNs"
        case .fcm: "FCM"
        case .webPush: "Web Push"
        case .hms: "Push Kit"
        }
    }

    /// What the network receives, without content: its headers and the body's size.
    public static func facts(_ payload: Push.Payload, collapsed: Bool) -> String {
        var facts: [String]
        switch payload {
        case .apns(let apns):
            facts = [
                "apns-push-type \(apns.type.rawValue)", "apns-priority \(apns.priority.rawValue)",
                "apns-topic \(apns.topic)", "body \(apns.json.utf8.count) bytes",
            ]
        case .fcm(let fcm):
            let bytes = fcm.data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            facts = ["priority \(fcm.priority.rawValue)", "data \(fcm.data.count) fields, \(bytes) bytes"]
        case .webPush(let web):
            facts = ["Urgency \(web.urgency.rawValue)", "plaintext \(web.json.utf8.count) bytes (encrypted, RFC 8291)"]
        case .hms(let hms):
            let bytes = hms.data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            facts = ["urgency \(hms.urgency.rawValue)", "data \(hms.data.count) fields, \(bytes) bytes"]
        }
        if collapsed { facts.append("collapses earlier pushes") }
        return facts.joined(separator: " · ")
    }

    private static func finalTitle(_ state: PushState) -> String {
        switch state {
        case .failed: "refused for good"
        case .tokenDead: "the token is dead: dropped"
        case .expired: "expired before it could be sent"
        case .skipped: "not sent: no usable token"
        default: state.rawValue
        }
    }
}
