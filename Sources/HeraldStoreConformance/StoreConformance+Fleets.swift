import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// A fleet's routes: an app's APNs key, FCM account and environment and a device's APNs
    /// environment read back as saved (nil: the defaults, as for records from before them), and a
    /// claim hands each push the route its token goes with (the device's environment, the app's
    /// key and account) in the push it makes.
    public static func fleetRoutesTravelWithTheToken(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        var app = StoreFixtures.app()
        #expect(try await store.app(id: app.id)?.apnsKey == nil, "the fixture app names no key")
        app.apnsKey = "team-b"
        app.fcmAccount = "project-b"
        app.apnsEnvironment = .production
        try await store.saveApp(app)
        #expect(try await store.app(id: app.id) == app)

        var production = StoreFixtures.device("d1")
        production.apnsEnvironment = .production
        try await store.saveDevice(production)
        try await store.saveDevice(StoreFixtures.device("d2"))
        var android = StoreFixtures.androidDevice("d3", token: "fcm-token-3")
        android.apnsEnvironment = nil
        try await store.saveDevice(android)
        #expect(try await store.device(id: "d1")?.apnsEnvironment == .production)
        #expect(try await store.device(id: "d2")?.apnsEnvironment == nil)
        #expect(try await store.recipients(userID: "u").map(\.device.apnsEnvironment) == [.production, nil, nil])

        let pushes = [
            StoreFixtures.push("p1", device: "d1", at: 1),
            StoreFixtures.push("p2", device: "d2", kind: .call, at: 2),
            StoreFixtures.fcmPush("p3", device: "d3", at: 3),
        ]
        #expect(try await store.accept(StoreFixtures.ingest(pushes)) == .accepted)
        let claimed = try await store.claim(limit: 10, owner: "w", now: 100, leaseUntil: 9000)
        let byID = Dictionary(uniqueKeysWithValues: claimed.map { ($0.entry.pushID, $0) })
        #expect(byID.count == 3)
        let p1 = try #require(byID["p1"])
        #expect(p1.apnsEnvironment == .production && p1.apnsKey == "team-b" && p1.fcmAccount == "project-b")
        guard case .apns(let apns1) = p1.push.payload else {
            Issue.record("p1 is an APNs push")
            return
        }
        #expect(apns1.environment == .production && apns1.key == "team-b")
        let p2 = try #require(byID["p2"])
        #expect(p2.apnsEnvironment == nil && p2.apnsKey == "team-b")
        guard case .fcm(let fcm3) = try #require(byID["p3"]).push.payload else {
            Issue.record("p3 is an FCM push")
            return
        }
        #expect(fcm3.account == "project-b")
    }
}
