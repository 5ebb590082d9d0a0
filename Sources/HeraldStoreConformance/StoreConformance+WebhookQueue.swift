import Foundation
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    static func webhookEvent(
        _ id: String,
        key: String,
        at time: Int64,
        app: String = "com.example.chat"
    )
        -> WebhookEvent
    {
        WebhookEvent(
            id: id,
            appID: app,
            type: .pushDelivered,
            orderingKey: key,
            data: #"{"push_id":"\#(key)"}"#,
            createdAt: time
        )
    }

    /// Only the first undelivered event of a key is claimable: the next one of the key is taken
    /// once the one before it is delivered (or failed), not while it waits to be retried; events
    /// not yet due are not taken.
    public static func webhookClaimsKeepOrderPerKey(_ engine: some StoreEngine) async throws {
        let store = try await engine.makeStore()
        try await store.enqueueWebhookEvents([
            webhookEvent("a1", key: "call:a", at: 100),
            webhookEvent("b1", key: "call:b", at: 110),
            webhookEvent("a2", key: "call:a", at: 120),
            webhookEvent("a3", key: "call:a", at: 130),
            webhookEvent("later", key: "call:c", at: 5_000),
        ])
        let first = try await store.claimWebhookEvents(
            StoreWork.Lease(owner: "n1", now: 1_000, until: 2_000, limit: 10)
        )
        #expect(first.map(\.event.id) == ["a1", "b1"], "one event per key, due ones only")
        #expect(first.allSatisfy { $0.state == .sending && $0.attempts == 1 })
        #expect(
            try await store.claimWebhookEvents(StoreWork.Lease(owner: "n1", now: 1_000, until: 2_000, limit: 10))
                .isEmpty
        )

        #expect(
            try await store.completeWebhookEvent(
                id: "a1",
                owner: "n1",
                .retry(at: 1_500, error: "HTTP 503"),
                now: 1_000
            )
        )
        #expect(try await store.completeWebhookEvent(id: "b1", owner: "n1", .delivered, now: 1_000))
        #expect(
            try await store.claimWebhookEvents(StoreWork.Lease(owner: "n1", now: 1_200, until: 2_000, limit: 10))
                .isEmpty,
            "a2 waits behind a1, which waits for its retry"
        )
        let retried = try await store.claimWebhookEvents(
            StoreWork.Lease(owner: "n1", now: 1_500, until: 2_500, limit: 10)
        )
        #expect(retried.map(\.event.id) == ["a1"])
        #expect(retried.first?.attempts == 2)
        #expect(retried.first?.lastError == "HTTP 503")
        #expect(try await store.completeWebhookEvent(id: "a1", owner: "n1", .delivered, now: 1_600))
        #expect(
            try await store.claimWebhookEvents(StoreWork.Lease(owner: "n1", now: 1_700, until: 2_500, limit: 10)).map(
                \.event.id
            )
                == ["a2"]
        )
        #expect(try await store.completeWebhookEvent(id: "a2", owner: "n1", .failed(error: "gave up"), now: 1_700))
        #expect(
            try await store.claimWebhookEvents(StoreWork.Lease(owner: "n1", now: 1_800, until: 2_500, limit: 10)).map(
                \.event.id
            )
                == ["a3"]
        )

        let delivered = try #require(try await store.webhookEvent(id: "a1"))
        #expect(delivered.state == .delivered)
        #expect(delivered.deliveredAt == 1_600)
        #expect(delivered.attempts == 2)
        let failed = try #require(try await store.webhookEvent(id: "a2"))
        #expect(failed.state == .failed)
        #expect(failed.lastError == "gave up")
        #expect(try await store.webhookQueueDepth() == 2, "a3 sending, later pending")
    }

    /// Two stores on the same data claiming at once never get the same event, and between them
    /// get every due one.
    public static func webhookClaimersNeverShareAnEvent(_ engine: some StoreEngine) async throws {
        let storage = try await engine.makeStorage()
        let nodeA = try await engine.open(storage)
        let nodeB = try await engine.open(storage)
        let events = (0..<40).map { webhookEvent("e\($0)", key: "push:\($0)", at: Int64($0)) }
        try await nodeA.enqueueWebhookEvents(events)
        async let takenA = nodeA.claimWebhookEvents(StoreWork.Lease(owner: "a", now: 1_000, until: 9_000, limit: 7))
        async let takenB = nodeB.claimWebhookEvents(StoreWork.Lease(owner: "b", now: 1_000, until: 9_000, limit: 7))
        var seen = Set<String>()
        var rounds = [try await takenA, try await takenB]
        while true {
            let a = try await nodeA.claimWebhookEvents(StoreWork.Lease(owner: "a", now: 1_000, until: 9_000, limit: 7))
            let b = try await nodeB.claimWebhookEvents(StoreWork.Lease(owner: "b", now: 1_000, until: 9_000, limit: 7))
            if a.isEmpty && b.isEmpty { break }
            rounds += [a, b]
        }
        for claimed in rounds.joined() {
            #expect(seen.insert(claimed.event.id).inserted, "\(claimed.event.id) claimed twice")
        }
        #expect(seen.count == 40)
    }

    /// An event whose sender's lease lapsed is taken over by another; the first sender's late
    /// completion then changes nothing.
    public static func webhookLapsedLeaseIsTakenOver(_ engine: some StoreEngine) async throws {
        let storage = try await engine.makeStorage()
        let nodeA = try await engine.open(storage)
        let nodeB = try await engine.open(storage)
        try await nodeA.enqueueWebhookEvents([webhookEvent("e1", key: "call:x", at: 100)])
        #expect(
            try await nodeA.claimWebhookEvents(StoreWork.Lease(owner: "a", now: 1_000, until: 2_000, limit: 5)).count
                == 1
        )
        #expect(
            try await nodeB.claimWebhookEvents(StoreWork.Lease(owner: "b", now: 1_999, until: 3_000, limit: 5)).isEmpty
        )
        let taken = try await nodeB.claimWebhookEvents(StoreWork.Lease(owner: "b", now: 2_000, until: 3_000, limit: 5))
        #expect(taken.map(\.event.id) == ["e1"])
        #expect(taken.first?.attempts == 2)
        #expect(try await nodeA.completeWebhookEvent(id: "e1", owner: "a", .delivered, now: 2_100) == false)
        #expect(try await nodeA.webhookEvent(id: "e1")?.state == .sending)
        #expect(try await nodeB.completeWebhookEvent(id: "e1", owner: "b", .delivered, now: 2_200))
        #expect(try await nodeB.completeWebhookEvent(id: "e1", owner: "b", .delivered, now: 2_300) == false)
        #expect(try await nodeA.webhookEvent(id: "e1")?.deliveredAt == 2_200)
    }

    /// One ordering key's events list in the order they were written, at most the limit, and no
    /// other key's.
    public static func webhookEventsByKey(_ engine: some StoreEngine) async throws {
        let store = try await engine.makeStore()
        try await store.enqueueWebhookEvents([
            webhookEvent("b", key: "push:p1", at: 200),
            webhookEvent("a", key: "push:p1", at: 100),
            webhookEvent("c", key: "push:p2", at: 50),
            webhookEvent("d", key: "push:p1", at: 300),
        ])
        #expect(try await store.webhookEvents(orderingKey: "push:p1", limit: 10).map(\.event.id) == ["b", "a", "d"])
        #expect(try await store.webhookEvents(orderingKey: "push:p1", limit: 2).map(\.event.id) == ["b", "a"])
        #expect(try await store.webhookEvents(orderingKey: "push:none", limit: 10).isEmpty)
    }

    /// An app's events list oldest first, filtered by state, in pages without gaps or repeats;
    /// retention removes delivered and failed events older than the cutoff, never undelivered ones.
    public static func webhookEventsListAndExpire(_ engine: some StoreEngine) async throws {
        let store = try await engine.makeStore()
        try await store.enqueueWebhookEvents(
            (0..<7).map { webhookEvent("e\($0)", key: "push:\($0)", at: 100 + Int64($0 / 2)) }
                + [webhookEvent("other", key: "push:o", at: 100, app: "com.example.other")]
        )
        var pages: [[String]] = []
        var cursor: WebhookEventCursor?
        while true {
            let page = try await store.webhookEvents(app: "com.example.chat", state: nil, limit: 3, after: cursor)
            if page.isEmpty { break }
            pages.append(page.map(\.event.id))
            cursor = page.last.map { WebhookEventCursor(createdAt: $0.event.createdAt, id: $0.event.id) }
        }
        #expect(pages.joined().sorted() == (0..<7).map { "e\($0)" })
        #expect(pages.map(\.count) == [3, 3, 1])
        #expect(
            try await store.claimWebhookEvents(StoreWork.Lease(owner: "n", now: 1_000, until: 2_000, limit: 10)).count
                == 8
        )
        #expect(try await store.completeWebhookEvent(id: "e0", owner: "n", .delivered, now: 1_000))
        #expect(try await store.completeWebhookEvent(id: "e1", owner: "n", .failed(error: "x"), now: 3_000))
        let delivered = try await store.webhookEvents(app: "com.example.chat", state: .delivered, limit: 10, after: nil)
        #expect(delivered.map(\.event.id) == ["e0"])
        #expect(try await store.deleteFinishedWebhookEvents(before: 1_000) == 0, "changed at the cutoff: kept")
        #expect(try await store.deleteFinishedWebhookEvents(before: 1_001) == 1)
        #expect(try await store.webhookEvent(id: "e0") == nil)
        #expect(try await store.deleteFinishedWebhookEvents(before: 10_000) == 1)
        #expect(try await store.webhookEvent(id: "e2")?.state == .sending, "undelivered events stay")
        #expect(
            try await store.webhookEvents(app: "com.example.other", state: .sending, limit: 10, after: nil).count == 1
        )
    }

    /// An app's webhook is kept with its url and sealed secret, and removed when saved without.
    public static func appWebhookIsKept(_ engine: some StoreEngine) async throws {
        let storage = try await engine.makeStorage()
        let store = try await engine.open(storage)
        var app = AppRecord(id: "com.example.hooked", teamID: "TEAM123456")
        app.webhook = AppWebhook(url: "https://backend.example/hooks", sealedSecret: [1, 2, 3, 0, 255])
        try await store.saveApp(app)
        let other = try await engine.open(storage)
        #expect(try await other.app(id: app.id) == app)
        #expect(try await other.apps().first { $0.id == app.id }?.webhook == app.webhook)
        app.webhook = nil
        try await store.saveApp(app)
        #expect(try await other.app(id: app.id)?.webhook == nil)
    }
}

extension StoreConformance {
    /// A push's final state (delivered, token dead, failed, and expired when the claim finds it
    /// so) writes its `push.<state>` event with it, keyed `push:<id>`, with ids, kind, state and
    /// reason, for apps that have a webhook only; a retried push writes none.
    public static func pushFinalStatesWriteWebhookEvents(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        let hooked = try await saveHookedApp(store, devices: ["h1"])
        let pushes = [
            StoreFixtures.push("n1", device: "d1", at: 1),
            StoreFixtures.push("h-del", device: "h1", at: 2),
            StoreFixtures.push("h-fail", device: "h1", at: 3),
            StoreFixtures.push("h-dead", device: "h1", at: 4),
            StoreFixtures.push("h-retry", device: "h1", at: 5),
            StoreFixtures.push("h-exp", device: "h1", at: 6, expires: 8),
        ]
        _ = try await store.accept(StoreFixtures.ingest(pushes))
        #expect(
            Set(try await claimIDs(store, owner: "w", now: 10, leaseUntil: 1_000))
                == ["n1", "h-del", "h-fail", "h-dead", "h-retry"]
        )
        // Only finished pushes, then a batch with a retry and a dead token (engines take other
        // paths for each).
        try await store.complete(
            [
                PushCompletion(pushID: "n1", disposition: .finish(.delivered), reason: nil, deadToken: nil),
                PushCompletion(pushID: "h-del", disposition: .finish(.delivered), reason: nil, deadToken: nil),
            ],
            now: 20
        )
        try await store.complete(
            [
                PushCompletion(
                    pushID: "h-fail",
                    disposition: .finish(.failed),
                    reason: "BadTopic (400)",
                    deadToken: nil
                ),
                PushCompletion(
                    pushID: "h-dead",
                    disposition: .finish(.tokenDead),
                    reason: "Unregistered",
                    deadToken: (deviceID: "h1", token: "aah1")
                ),
                PushCompletion(pushID: "h-retry", disposition: .retry(at: 500), reason: "Throttled", deadToken: nil),
            ],
            now: 30
        )
        #expect(try await store.webhookEvents(app: StoreFixtures.appID, state: nil, limit: 10, after: nil).isEmpty)
        let events = try await store.webhookEvents(app: hooked, state: nil, limit: 10, after: nil)
        let byPush = Dictionary(uniqueKeysWithValues: events.map { ($0.event.orderingKey, $0) })
        #expect(Set(byPush.keys) == ["push:h-del", "push:h-fail", "push:h-dead", "push:h-exp"])
        let expected: [String: (WebhookEventType, String?, Int64)] = [
            "h-del": (.pushDelivered, nil, 20), "h-fail": (.pushFailed, "BadTopic (400)", 30),
            "h-dead": (.pushTokenDead, "Unregistered", 30), "h-exp": (.pushExpired, "expired before sending", 10),
        ]
        for (push, (type, reason, time)) in expected {
            let stored = try #require(byPush["push:" + push])
            #expect(stored.event.type == type, "\(push)")
            #expect(stored.event.createdAt == time, "\(push)")
            #expect(stored.state == .pending)
            let data = try #require(
                try JSONSerialization.jsonObject(with: Data(stored.event.data.utf8)) as? [String: Any]
            )
            #expect(data["push_id"] as? String == push)
            #expect(data["device_id"] as? String == "h1")
            #expect(data["user_id"] as? String == "alice")
            #expect(data["kind"] as? String == "message")
            #expect(data["state"] as? String == String(type.rawValue.dropFirst("push.".count)))
            #expect(data["reason"] as? String == reason, "\(push)")
        }
    }
}

extension StoreConformance {
    /// A disconnect is saved with its events; a removal writes the events made of the removed
    /// disconnect, and none when there was nothing to remove.
    public static func chatDisconnectsWriteWebhookEvents(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        let disconnect = ChatDisconnect(deviceID: "d1", conversation: "chat-1", position: 4, at: 100)
        try await store.saveDisconnect(
            disconnect,
            events: [webhookEvent("off", key: "conversation:chat-1", at: 100, app: StoreFixtures.appID)]
        )
        let back = try await store.removeDisconnect(deviceID: "d1", conversation: "chat-1") { found in
            [webhookEvent("back-\(found.position)", key: "conversation:chat-1", at: 200, app: StoreFixtures.appID)]
        }
        #expect(back == disconnect)
        let again = try await store.removeDisconnect(deviceID: "d1", conversation: "chat-1") { _ in
            [webhookEvent("never", key: "conversation:chat-1", at: 300, app: StoreFixtures.appID)]
        }
        #expect(again == nil)
        let events = try await store.webhookEvents(app: StoreFixtures.appID, state: nil, limit: 10, after: nil)
        #expect(events.map(\.event.id) == ["off", "back-4"])
    }
}
