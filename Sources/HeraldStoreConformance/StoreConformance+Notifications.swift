import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// `setNotificationPermission`: a device starts `granted`; a different permission is set with
    /// its time and its events in one transaction, the same one again changes nothing and writes
    /// no event; of two reports racing to change it exactly one does; saving the device again (a
    /// re-activation) keeps what it holds; the ingest read (`recipients`) sees it; an alert
    /// written already skipped (withheld from a denied device) is never claimed, and one queued
    /// before the device denied it is finished skipped (`notifications_denied`) by the claim.
    public static func notificationPermissionChangesOnce(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1", createdAt: 5))
        try await store.saveDevice(StoreFixtures.device("d2", createdAt: 6))
        let fresh = try #require(try await store.device(id: "d1"))
        #expect(fresh.notificationPermission == .granted && fresh.notificationPermissionAt == nil)
        #expect(
            try await store.setNotificationPermission(deviceID: "nobody", .denied, now: 10, events: []) == nil,
            "an unknown device"
        )

        let denied = try #require(
            try await store.setNotificationPermission(
                deviceID: "d1",
                .denied,
                now: 10,
                events: [permissionEvent("deny-1", device: "d1", .deviceNotificationsDenied, at: 10)]
            )
        )
        #expect(denied.changed)
        #expect(denied.device.notificationPermission == .denied && denied.device.notificationPermissionAt == 10)
        #expect(try await store.webhookEvent(id: "deny-1")?.event.type == .deviceNotificationsDenied)

        let again = try #require(
            try await store.setNotificationPermission(
                deviceID: "d1",
                .denied,
                now: 20,
                events: [permissionEvent("deny-2", device: "d1", .deviceNotificationsDenied, at: 20)]
            )
        )
        #expect(!again.changed && again.device.notificationPermissionAt == 10, "the same permission again")
        #expect(try await store.webhookEvent(id: "deny-2") == nil)
        let permissions = try await store.recipients(userID: "u").map(\.device.notificationPermission)
        #expect(permissions == [.denied, .granted])

        // Saved again as a re-activation saves it (the record as read, new keys): kept.
        var reactivated = try #require(try await store.device(id: "d1"))
        reactivated.keyID = "8899aabbccddeeff"
        reactivated.updatedAt = 30
        try await store.saveDevice(reactivated)
        #expect(try await store.device(id: "d1") == reactivated)
        #expect(reactivated.notificationPermission == .denied)
        try await racingGrantsChangeOnce(store)
        try await deniedDeviceAlertsAreSkipped(store)
    }

    /// Two reports granting d1 at once: one changes it and writes its event, the other nothing.
    private static func racingGrantsChangeOnce(_ store: any HeraldStore) async throws {
        async let first = store.setNotificationPermission(
            deviceID: "d1",
            .granted,
            now: 40,
            events: [permissionEvent("grant-a", device: "d1", .deviceNotificationsGranted, at: 40)]
        )
        async let second = store.setNotificationPermission(
            deviceID: "d1",
            .granted,
            now: 41,
            events: [permissionEvent("grant-b", device: "d1", .deviceNotificationsGranted, at: 41)]
        )
        let results = try await [first, second]
        #expect(results.map { $0?.changed == true }.filter { $0 }.count == 1)
        let written = [
            try await store.webhookEvent(id: "grant-a") != nil, try await store.webhookEvent(id: "grant-b") != nil,
        ]
        #expect(written.filter { $0 }.count == 1)
        #expect(try await store.device(id: "d1")?.notificationPermission == .granted)
    }

    /// An alert withheld from a denied device (d2) is written finished: listed, never claimed;
    /// alerts queued before it turned notifications off are finished skipped when claimed, and
    /// its call still goes out.
    private static func deniedDeviceAlertsAreSkipped(_ store: any HeraldStore) async throws {
        var withheld = StoreFixtures.push("p-withheld", device: "d2", at: 50)
        withheld.state = .skipped
        withheld.lastReason = "notifications_denied"
        let queued = StoreFixtures.push("p-queued", device: "d2", at: 51)
        #expect(try await store.accept(StoreFixtures.ingest([withheld, queued])) == .accepted)
        #expect(try await store.push(id: "p-withheld") == withheld)
        let claimed = try await store.claim(limit: 10, owner: "w", now: 100, leaseUntil: 9000)
        #expect(claimed.map(\.entry.pushID) == ["p-queued"])
        #expect(try await store.push(id: "p-withheld")?.state == .skipped)

        // Alerts queued before the device turned notifications off are finished skipped when
        // claimed; its call still goes out.
        let late = [
            StoreFixtures.push("p-late-message", device: "d2", at: 60),
            StoreFixtures.push("p-late-callback", device: "d2", kind: .callback, at: 61),
            StoreFixtures.push("p-late-call", device: "d2", kind: .call, at: 62),
        ]
        #expect(try await store.accept(StoreFixtures.ingest(late)) == .accepted)
        _ = try await store.setNotificationPermission(deviceID: "d2", .denied, now: 70, events: [])
        let taken = try await store.claim(limit: 10, owner: "w", now: 100, leaseUntil: 9000)
        #expect(taken.map(\.entry.pushID) == ["p-late-call"])
        for id in ["p-late-message", "p-late-callback"] {
            let finished = try #require(try await store.push(id: id))
            #expect(finished.state == .skipped && finished.lastReason == "notifications_denied", "\(id)")
            #expect(finished.attempts == 0, "the claim's attempt is given back")
        }
    }

    /// A message's sealed push options are written with its ingest and read back as they were;
    /// a message without them reads `nil`.
    public static func messagesKeepTheirPushOptions(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        var kept = StoreFixtures.message("m-options", at: 1, expires: 90_000)
        kept.sealedPushOptions = [UInt8](repeating: 7, count: 60)
        let plain = StoreFixtures.message("m-plain", at: 2, expires: 90_000)
        #expect(try await store.accept(StoreFixtures.ingest([], key: "k-options", message: kept)) == .accepted)
        #expect(try await store.accept(StoreFixtures.ingest([], message: plain)) == .accepted)
        #expect(try await store.message(id: "m-options") == kept)
        #expect(try await store.message(id: "m-plain")?.sealedPushOptions == nil)
    }

    static func permissionEvent(
        _ id: String,
        device: String,
        _ type: WebhookEventType,
        at time: Int64
    ) -> WebhookEvent {
        subjectEvent(id, type, subject: "device", device, at: time)
    }
}
