import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// A browser's subscription: its keys are saved with its endpoint (the messaging token), read
    /// back with the device and handed out by the claim in the push it makes; a renewal replaces
    /// both at once, so a push that waited is encrypted for the subscription the device has; an
    /// update that names no endpoint keeps them, one that removes it drops them.
    public static func webPushKeysTravelWithTheClaim(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveApp(StoreFixtures.app())
        let first = try #require(WebPushKeys(p256dh: [0x04] + Array(repeating: 1, count: 64), auth: Array(1...16)))
        let renewed = try #require(WebPushKeys(p256dh: [0x04] + Array(repeating: 2, count: 64), auth: Array(17...32)))
        var browser = StoreFixtures.device("w1")
        browser.platform = .web
        browser.messagingToken = "https://push.example.net/wp/1"
        browser.voipToken = nil
        browser.webPushKeys = first
        try await store.saveDevice(browser)
        #expect(try await store.device(id: "w1")?.webPushKeys == first)
        #expect(try await store.device(id: "d-none") == nil)

        var push = StoreFixtures.push("p1", device: "w1", at: 1)
        push.payload = .webPush(WebPushPayload(app: StoreFixtures.appID, urgency: .high, json: "{\"v\":\"1\"}"))
        #expect(try await store.accept(StoreFixtures.ingest([push])) == .accepted)
        let renewal = TokenUpdate(
            deviceID: "w1",
            messaging: "https://push.example.net/wp/2",
            at: 5,
            webPushKeys: renewed
        )
        #expect(try await store.apply([.updateTokens(renewal)]) == [.applied])
        #expect(try await store.device(id: "w1")?.webPushKeys == renewed)

        let claimed = try #require(try await store.claim(limit: 10, owner: "w", now: 100, leaseUntil: 9000).first)
        #expect(claimed.deviceToken == "https://push.example.net/wp/2" && claimed.webPushKeys == renewed)
        guard case .webPush(let payload) = claimed.push.payload else {
            Issue.record("p1 is a Web Push push")
            return
        }
        #expect(payload.keys == renewed && payload.urgency == .high && payload.json == "{\"v\":\"1\"}")
        #expect(payload.app == StoreFixtures.appID)

        let presence = TokenUpdate(deviceID: "w1", voip: nil, at: 6)
        _ = try await store.apply([.updateTokens(presence)])
        #expect(try await store.device(id: "w1")?.webPushKeys == renewed, "no endpoint named: the keys stay")
        let removal = TokenUpdate(deviceID: "w1", messaging: "", at: 7, webPushKeys: renewed)
        #expect(try await store.apply([.updateTokens(removal)]) == [.applied])
        let removed = try #require(try await store.device(id: "w1"))
        #expect(removed.messagingToken == nil && removed.webPushKeys == nil)
    }
}
