import HeraldStore
import Testing

extension StoreConformance {
    /// Enqueued events are durable and read back pending, due at their time, with no attempt; an
    /// id written twice keeps its first event; another store on the same data reads them.
    public static func webhookEventsAreQueued(_ engine: some StoreEngine) async throws {
        let storage = try await engine.makeStorage()
        let store = try await engine.open(storage)
        let ringing = WebhookEvent(
            id: "evt-1",
            appID: "com.example.chat",
            type: .callRinging,
            orderingKey: "call:c1",
            data: #"{"call_id":"c1","state":"ringing"}"#,
            createdAt: 1_000
        )
        let answered = WebhookEvent(
            id: "evt-2",
            appID: "com.example.chat",
            type: .callAnswered,
            orderingKey: "call:c1",
            data: #"{"call_id":"c1","state":"answered","device_id":"d1"}"#,
            createdAt: 2_000
        )
        #expect(try await store.webhookEvent(id: "evt-1") == nil)
        try await store.enqueueWebhookEvents([ringing, answered])
        var changed = ringing
        changed.data = "{}"
        try await store.enqueueWebhookEvents([changed])

        let other = try await engine.open(storage)
        let stored = try #require(try await other.webhookEvent(id: "evt-1"))
        #expect(
            stored
                == StoredWebhookEvent(
                    event: ringing,
                    state: .pending,
                    attempts: 0,
                    nextAttemptAt: 1_000,
                    lastError: nil,
                    deliveredAt: nil,
                    updatedAt: 1_000
                )
        )
        #expect(try await other.webhookEvent(id: "evt-2")?.event == answered)
        try await store.enqueueWebhookEvents([])
    }
}
