import Foundation
import HeraldCrypto
import HeraldRelayAPI
import HeraldStore

/// A message for a user without an activated device (docs/relay.md, "A message to nobody"):
/// held for the user's first device, or refused so that the sender retries; never accepted into
/// nothing.
extension RelayIngest {
    /// The message for a user none of whose devices (of `onlyApp`, when given) is activated, as
    /// the policy says: held (sealed and durable like every message, its key used) or refused
    /// (nothing written, its key unused, so the sender's retry after the activation is a new
    /// message).
    func toNobody(_ draft: MessageDraft) async throws(RelayError) -> IngestReceipt {
        let (request, onlyApp, options, extras, time, messageID) = draft.parts
        let policies = try await undeliverablePolicies(app: onlyApp)
        let until: Int64
        switch UndeliverableRule.decide(recipients: 0, policies: policies, now: time) {
        case .hold(let end):
            until = end
        case .refuse, .push:
            // (`push` needs a recipient: there is none.)
            context.metrics.undeliverable(.refused).increment()
            throw .noDevices(user: request.to)
        }
        let receipt = IngestReceipt(id: messageID, pushes: [], skipped: [], status: .held, heldUntil: until)
        let message = context.messageRecord(
            request,
            id: messageID,
            at: time,
            // Kept for fetch-by-id as long after its push as any message.
            expiresAt: until + context.configuration.messageRetention.milliseconds,
            // The push made at the release carries what a direct one would have.
            sealedPushOptions: context.sealPushOptions(
                StoredPushOptions(options, title: extras.title, data: extras.data),
                messageID: messageID
            )
        )
        let ingest = Ingest(
            // The key an accepted message of this sender would have used (`send`).
            idempotencyKey: Self.storedKey(message: request.idempotencyKey, app: onlyApp),
            message: message,
            pushes: [],
            receipt: Array(receipt.jsonText.utf8)
        )
        let change = IngestPlanner.hold(ingest, until: until, appID: onlyApp, messageID: messageID)
        switch try await context.commit(change).first {
        case .applied:
            return receipt
        case .duplicate:
            return try await firstReceipt(key: ingest.idempotencyKey)
        case .stale:
            // A device activated since the recipients were read: the message is made for it.
            return try await sendAgain(draft)
        case .answered, nil:
            throw RelayError.unavailable.with(detail: "the store answered a hold as no hold")
        }
    }

    /// A broadcast member's message: a member the policy refuses is answered `refused` in the
    /// broadcast's receipt rather than failing the broadcast, whose other members were sent.
    func member(message request: MessageRequest, app: String?) async throws(RelayError) -> IngestReceipt {
        do {
            return try await send(message: request, app: app)
        } catch  where error.isNoDevices {
            return IngestReceipt(id: "", pushes: [], skipped: [], status: .refused)
        }
    }

    /// The policies that decide: the sender's app's when the sender is an app; else every app's
    /// (a message names no app), or the relay's default when no app is registered.
    private func undeliverablePolicies(app onlyApp: String?) async throws(RelayError) -> [UndeliverablePolicy] {
        let relay = context.configuration.undeliverable
        if let onlyApp { return [UndeliverablePolicy(app: try await context.app(id: onlyApp), default: relay)] }
        let apps = try await context.storing { try await $0.apps() }
        guard !apps.isEmpty else { return [UndeliverablePolicy(app: nil, default: relay)] }
        return apps.map { UndeliverablePolicy(app: $0, default: relay) }
    }
}
