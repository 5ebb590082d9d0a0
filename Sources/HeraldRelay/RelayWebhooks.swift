import Foundation
public import HeraldRelayAPI
import HeraldStore

/// The relay's webhook part: the delivery state of the events queued for the apps' webhooks.
public final class RelayWebhooks: Sendable {
    let context: RelayContext

    init(context: RelayContext) {
        self.context = context
    }

    /// The janitor's part for webhooks: deletes the events delivered or failed longer ago than
    /// `messageRetention` (as finished pushes); undelivered ones stay. Returns how many went.
    public func purgeFinished() async throws(RelayError) -> Int {
        let before = context.clock.now() - context.configuration.messageRetention.milliseconds
        return try await context.storing { try await $0.deleteFinishedWebhookEvents(before: before) }
    }

    /// One event with its delivery state.
    public func event(id: String) async throws(RelayError) -> WebhookEventView {
        guard let stored = try await context.storing({ try await $0.webhookEvent(id: id) }) else {
            throw RelayError.notFound.with(detail: "no webhook event \(id)")
        }
        return WebhookEventView(stored)
    }

    /// An app's events, oldest first, in pages of `limit` (1–500); `cursor` is the page before's
    /// `next_cursor`.
    public func events(
        app: String,
        state: String?,
        limit: Int,
        cursor: String?
    ) async throws(RelayError)
        -> WebhookEventList
    {
        try context.configuration.check(app, "app", pattern: .bundleID)
        guard (1...500).contains(limit) else { throw .invalidField("limit", "must be between 1 and 500") }
        var wanted: WebhookEventState?
        if let state {
            guard let known = WebhookEventState(rawValue: state) else {
                throw .invalidField(
                    "state",
                    "must be one of " + WebhookEventState.allCases.map(\.rawValue).joined(separator: ", ")
                )
            }
            wanted = known
        }
        var after: WebhookEventCursor?
        if let cursor {
            let parts = cursor.split(separator: "_", maxSplits: 1)
            guard parts.count == 2, let time = Int64(parts[0]) else {
                throw .invalidField("cursor", "is not a cursor this listing gave")
            }
            after = WebhookEventCursor(createdAt: time, id: String(parts[1]))
        }
        let filter = wanted
        let start = after
        let page = try await context.storing {
            try await $0.webhookEvents(app: app, state: filter, limit: limit + 1, after: start)
        }
        let shown = page.prefix(limit)
        let next = page.count > limit ? shown.last.map { "\($0.event.createdAt)_\($0.event.id)" } : nil
        return WebhookEventList(events: shown.map(WebhookEventView.init), nextCursor: next)
    }
}

extension WebhookEventView {
    init(_ stored: StoredWebhookEvent) {
        self.init(
            id: stored.event.id,
            type: stored.event.type.rawValue,
            app: stored.event.appID,
            orderingKey: stored.event.orderingKey,
            createdAt: stored.event.createdAt,
            state: stored.state.rawValue,
            attempts: stored.attempts,
            nextAttemptAt: stored.state == .pending ? stored.nextAttemptAt : nil,
            lastError: stored.lastError,
            deliveredAt: stored.deliveredAt,
            data: WebhookJSON(text: stored.event.data) ?? .object([:])
        )
    }
}
