import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// A push's trace context (the W3C `traceparent` of the request that made it, written only
    /// while tracing is on) is read back with the push, claimed with it onto the push to send, and
    /// copied onto the `push.<state>` webhook event its final state writes, also when the claim
    /// finishes it; a push written without one has none anywhere (docs/tracing.md).
    public static func aPushKeepsItsTraceContext(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        let hooked = try await saveHookedApp(store, devices: ["h1"])
        let traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        var traced = StoreFixtures.push("t-traced", device: "h1", at: 1)
        traced.traceParent = traceParent
        var expiring = StoreFixtures.push("t-expiring", device: "h1", at: 2, expires: 8)
        expiring.traceParent = traceParent
        let plain = StoreFixtures.push("t-plain", device: "h1", at: 3)
        _ = try await store.accept(StoreFixtures.ingest([traced, expiring, plain]))
        #expect(try await store.push(id: "t-traced")?.traceParent == traceParent)
        #expect(try await store.push(id: "t-plain")?.traceParent == nil)

        let claimed = try await store.claim(limit: 10, owner: "w", now: 10, leaseUntil: 1_000)
        let byID = Dictionary(uniqueKeysWithValues: claimed.map { ($0.entry.pushID, $0) })
        #expect(Set(byID.keys) == ["t-traced", "t-plain"])
        #expect(byID["t-traced"]?.push.traceParent == traceParent)
        #expect(byID["t-plain"]?.push.traceParent == nil)

        try await store.complete(
            [
                PushCompletion(pushID: "t-traced", disposition: .finish(.delivered), reason: nil, deadToken: nil),
                PushCompletion(pushID: "t-plain", disposition: .finish(.delivered), reason: nil, deadToken: nil),
            ],
            now: 20
        )
        let events = try await store.webhookEvents(app: hooked, state: nil, limit: 10, after: nil)
        let byKey = Dictionary(uniqueKeysWithValues: events.map { ($0.event.orderingKey, $0.event) })
        #expect(Set(byKey.keys) == ["push:t-traced", "push:t-expiring", "push:t-plain"])
        #expect(byKey["push:t-traced"]?.traceParent == traceParent)
        #expect(byKey["push:t-expiring"]?.traceParent == traceParent)
        #expect(byKey["push:t-plain"]?.traceParent == nil)
        // The context is never part of what the receiver gets.
        #expect(events.allSatisfy { !$0.event.data.contains(traceParent) })

        // An event the relay writes itself (a receipt's) keeps the context it is given.
        let shown = WebhookEvent(
            id: "push.shown:t-traced",
            appID: hooked,
            type: .pushShown,
            orderingKey: "push:t-traced",
            data: "{}",
            createdAt: 30,
            traceParent: traceParent
        )
        try await store.apply([.enqueueWebhookEvents([shown])])
        #expect(try await store.webhookEvent(id: shown.id)?.event == shown)
    }
}
