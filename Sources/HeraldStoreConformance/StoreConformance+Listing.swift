import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// `pushes(matching:)` lists newest first and keeps exactly the pushes every given condition
    /// names: a user's (through the devices the user has now), a device's (even once the device
    /// is gone, then without its app), a state's, those accepted since a time. Each push shows
    /// its device's app, network, kind, state, attempts, last reason, `apns-id` (none for FCM)
    /// and times; an unknown user or device lists nothing.
    public static func pushListingFilters(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1", user: "alice"))
        try await store.saveDevice(StoreFixtures.androidDevice("a1", user: "alice", token: "fcm-a1"))
        try await store.saveDevice(StoreFixtures.device("d2", user: "bob"))
        try await store.saveDevice(StoreFixtures.device("d3", user: "carol"))
        _ = try await store.accept(
            StoreFixtures.ingest([
                StoreFixtures.push("p1", device: "d1", at: 10),
                StoreFixtures.push("p2", device: "d2", at: 20),
                StoreFixtures.fcmPush("p3", device: "a1", kind: .call, at: 30),
                StoreFixtures.push("p4", device: "d1", kind: .call, at: 40, expires: 30_040),
                StoreFixtures.push("p5", device: "d3", at: 50),
            ])
        )
        #expect(try await claimIDs(store, now: 100).sorted() == ["p1", "p2", "p3", "p4", "p5"])
        try await store.complete(
            [
                PushCompletion(pushID: "p1", disposition: .finish(.delivered), reason: nil, deadToken: nil),
                PushCompletion(
                    pushID: "p2",
                    disposition: .finish(.tokenDead),
                    reason: "BadDeviceToken",
                    deadToken: (deviceID: "d2", token: "aad2")
                ),
                PushCompletion(pushID: "p3", disposition: .retry(at: 500), reason: "UNAVAILABLE", deadToken: nil),
                PushCompletion(pushID: "p4", disposition: .finish(.failed), reason: "BadTopic (400)", deadToken: nil),
            ],
            now: 200
        )
        #expect(try await store.deleteDevice(id: "d3"))

        // Another store on the same data answers the same (another relay node).
        let node = try await engine.open(storage)
        try await checkListingFilters(node)
        try await checkListedSummaries(node)
    }

    /// The filters of `pushListingFilters`, each alone and combined.
    private static func checkListingFilters(_ node: any HeraldStore) async throws {
        func ids(_ query: PushQuery) async throws -> [String] {
            try await node.pushes(matching: query).pushes.map(\.pushID)
        }
        #expect(try await ids(PushQuery()) == ["p5", "p4", "p3", "p2", "p1"])
        #expect(try await ids(PushQuery(userID: "alice")) == ["p4", "p3", "p1"])
        #expect(try await ids(PushQuery(userID: "bob")) == ["p2"])
        #expect(try await ids(PushQuery(deviceID: "d1")) == ["p4", "p1"])
        #expect(try await ids(PushQuery(userID: "alice", deviceID: "a1")) == ["p3"])
        #expect(try await ids(PushQuery(userID: "bob", deviceID: "a1")) == [])
        #expect(try await ids(PushQuery(state: .delivered)) == ["p1"])
        #expect(try await ids(PushQuery(state: .queued)) == ["p3"])
        #expect(try await ids(PushQuery(state: .sending)) == ["p5"])
        #expect(try await ids(PushQuery(userID: "alice", state: .failed)) == ["p4"])
        #expect(try await ids(PushQuery(since: 30)) == ["p5", "p4", "p3"])
        #expect(try await ids(PushQuery(userID: "alice", since: 31)) == ["p4"])
        #expect(try await ids(PushQuery(since: 51)) == [])
        // The deactivated device's push: by its device, without an app; no longer by its user.
        #expect(try await ids(PushQuery(userID: "carol")) == [])
        #expect(try await ids(PushQuery(deviceID: "d3")) == ["p5"])
        #expect(try await ids(PushQuery(userID: "nobody")) == [])
        #expect(try await ids(PushQuery(deviceID: "nothing")) == [])
    }

    /// What `pushListingFilters` shows of each push: app, network, kind, state, attempts, last
    /// reason, `apns-id` and times.
    private static func checkListedSummaries(_ node: any HeraldStore) async throws {
        let page = try await node.pushes(matching: PushQuery())
        #expect(page.next == nil)
        let shown = Dictionary(uniqueKeysWithValues: page.pushes.map { ($0.pushID, $0) })
        #expect(
            shown["p2"]
                == PushSummary(
                    pushID: "p2",
                    deviceID: "d2",
                    userID: "bob",
                    appID: StoreFixtures.appID,
                    network: .apns,
                    kind: .message,
                    subjectID: "s-p2",
                    state: .tokenDead,
                    attempts: 1,
                    lastReason: "BadDeviceToken",
                    apnsID: "p2",
                    createdAt: 20,
                    updatedAt: 200,
                    expiresAt: 1_000_000
                )
        )
        #expect(
            shown["p3"]
                == PushSummary(
                    pushID: "p3",
                    deviceID: "a1",
                    userID: "alice",
                    appID: StoreFixtures.appID,
                    network: .fcm,
                    kind: .call,
                    subjectID: "s-p3",
                    state: .queued,
                    attempts: 1,
                    lastReason: "UNAVAILABLE",
                    apnsID: nil,
                    createdAt: 30,
                    updatedAt: 200,
                    expiresAt: 1_000_000
                )
        )
        #expect(
            shown["p4"]?.kind == .call && shown["p4"]?.apnsID == "p4" && shown["p4"]?.lastReason == "BadTopic (400)"
        )
        #expect(shown["p5"]?.appID == nil && shown["p5"]?.state == .sending && shown["p5"]?.attempts == 1)
        #expect(shown["p1"]?.state == .delivered && shown["p1"]?.lastReason == nil && shown["p1"]?.updatedAt == 200)
    }

    /// Pages read one after another with `next` list every push once, in order, even where many
    /// share an acceptance time; pushes accepted between pages do not enter the listing; the last
    /// page (also one exactly full) has no `next`; a page holds at most `limit` pushes, taken
    /// within 1…500.
    public static func pushListingPagesWithoutGapsOrRepeats(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1", user: "alice"))
        try await store.saveDevice(StoreFixtures.device("d2", user: "bob"))
        // 30 pushes over 10 acceptance times: three at each, ids out of time order.
        let pushes = (0..<30).map { index in
            let number = (index * 7) % 30
            return StoreFixtures.push(
                (number < 10 ? "p0" : "p") + "\(number)",
                device: index % 2 == 0 ? "d1" : "d2",
                at: Int64(1000 + (index / 3) * 10)
            )
        }
        _ = try await store.accept(StoreFixtures.ingest(pushes))
        func newestFirst(_ entries: [OutboxEntry]) -> [String] {
            entries.sorted { ($0.createdAt, $0.pushID) > ($1.createdAt, $1.pushID) }.map(\.pushID)
        }

        var acceptedBetweenPages: [OutboxEntry] = []
        for limit in [1, 4, 7, 10, 29, 30, 31] {
            let expected = newestFirst(pushes + acceptedBetweenPages)
            var listed: [String] = []
            var cursor: PushCursor?
            var pages = 0
            repeat {
                let page = try await store.pushes(matching: PushQuery(after: cursor, limit: limit))
                #expect(page.pushes.count <= limit)
                listed += page.pushes.map(\.pushID)
                cursor = page.next
                pages += 1
                if pages == 1 {
                    // A newer push accepted after the first page stays out of this listing.
                    let newer = StoreFixtures.push("new-\(limit)", device: "d1", at: 5000 + Int64(limit))
                    _ = try await store.accept(StoreFixtures.ingest([newer]))
                    acceptedBetweenPages.append(newer)
                }
            } while cursor != nil && pages <= 100
            #expect(listed == expected, "pages of \(limit)")
            #expect(pages == max(1, (expected.count + limit - 1) / limit), "pages of \(limit)")
        }

        // A filtered listing pages the same way.
        var alice: [String] = []
        var cursor: PushCursor?
        repeat {
            let page = try await store.pushes(
                matching: PushQuery(userID: "alice", since: 1020, after: cursor, limit: 2)
            )
            alice += page.pushes.map(\.pushID)
            cursor = page.next
        } while cursor != nil
        #expect(
            alice == newestFirst((pushes + acceptedBetweenPages).filter { $0.deviceID == "d1" && $0.createdAt >= 1020 })
        )

        // A cursor past the oldest push: an empty last page.
        let oldest = try #require(pushes.min { ($0.createdAt, $0.pushID) < ($1.createdAt, $1.pushID) })
        let past = try await store.pushes(
            matching: PushQuery(after: PushCursor(createdAt: oldest.createdAt, pushID: oldest.pushID))
        )
        #expect(past.pushes.isEmpty && past.next == nil)

        // Limits out of bounds are taken within 1…500.
        let none = try await store.pushes(matching: PushQuery(limit: 0))
        #expect(none.pushes.count == 1 && none.next != nil)
        let negative = try await store.pushes(matching: PushQuery(limit: -5))
        #expect(negative.pushes.count == 1)
        let more = (0..<520).map { StoreFixtures.push("bulk-\($0)", device: "d2", at: 2000) }
        _ = try await store.accept(StoreFixtures.ingest(more))
        let capped = try await store.pushes(matching: PushQuery(limit: 10_000))
        #expect(capped.pushes.count == PushQuery.limits.upperBound && capped.next != nil)
    }
}
