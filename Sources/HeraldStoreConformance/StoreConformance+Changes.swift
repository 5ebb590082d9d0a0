import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// `apply`: one outcome per change, in order: `applied` for what was written, `duplicate`
    /// for what the store held already (a taken key id, the permission a device has), `stale` for
    /// a row that is gone (tokens or permission of an unknown device, a second delete, revoking
    /// a revoked key); a duplicate or stale change writes nothing, its audit entry included, and
    /// leaves the others of its batch written. A change that fails undoes its whole batch, and a
    /// batch is seen by another store on the same data once `apply` returned.
    public static func changesAnswerEachInOneTransaction(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        #expect(try await store.apply([]) == [])
        let key = APIKeyRecord(
            id: "00000000000000c3",
            name: "crm",
            appID: StoreFixtures.appID,
            scopes: [.send],
            secretDigest: Array(repeating: 1, count: 32),
            createdAt: 10
        )
        let created = AuditEntry(id: "a1", at: 10, actor: "cli", action: "key.created", target: key.id, appID: nil)
        let createdAgain = AuditEntry(id: "a2", at: 11, actor: "cli", action: "key.created", target: key.id, appID: nil)
        let revoked = AuditEntry(id: "a3", at: 12, actor: "cli", action: "key.revoked", target: key.id, appID: nil)
        let revokedAgain = AuditEntry(id: "a4", at: 13, actor: "cli", action: "key.revoked", target: key.id, appID: nil)
        let outcomes = try await store.apply([
            .saveDevice(StoreFixtures.device("d1", createdAt: 5)),
            .updateTokens(TokenUpdate(deviceID: "ghost", messaging: "aa11", voip: nil, at: 6)),
            .setNotificationPermission(PermissionReport(deviceID: "d1", permission: .granted, at: 7, events: [])),
            .setNotificationPermission(PermissionReport(deviceID: "ghost", permission: .denied, at: 7, events: [])),
            .deleteDevice(id: "ghost"),
            .insertAPIKey(key, audit: created),
            .insertAPIKey(key, audit: createdAgain),
            .revokeAPIKey(id: key.id, at: 12, audit: revoked),
            .revokeAPIKey(id: key.id, at: 13, audit: revokedAgain),
            .savePresence(
                PresenceRecord(
                    deviceID: "d1",
                    userID: "u",
                    conversation: nil,
                    state: .active,
                    updatedAt: 8,
                    expiresAt: 9
                )
            ),
        ])
        #expect(
            outcomes == [
                .applied, .stale, .duplicate, .stale, .stale, .applied, .duplicate, .applied, .stale, .applied,
            ]
        )

        let other = try await engine.open(storage)
        #expect(try await other.device(id: "d1") != nil)
        #expect(try await other.apiKeys().map(\.revokedAt) == [12], "the first revocation's time stays")
        #expect(try await other.auditEntries(before: nil, limit: 10).map(\.id) == ["a3", "a1"])
        #expect(try await other.recipients(userID: "u").first?.presence?.updatedAt == 8)

        let updated = try await store.apply([
            .updateTokens(TokenUpdate(deviceID: "d1", messaging: "", voip: "cc01", at: 20))
        ])
        #expect(updated == [.applied])
        let device = try #require(try await other.device(id: "d1"))
        #expect(device.messagingToken == nil && device.voipToken == "cc01" && device.updatedAt == 20)
        #expect(try await store.apply([.deleteDevice(id: "d1"), .deleteDevice(id: "d1")]) == [.applied, .stale])

        // A presence for a device that is not there breaks a reference: the batch fails whole.
        var app = StoreFixtures.app()
        app.id = "com.example.undone"
        await #expect(throws: (any Error).self) {
            try await store.apply([
                .saveApp(app),
                .savePresence(
                    PresenceRecord(
                        deviceID: "gone",
                        userID: "u",
                        conversation: nil,
                        state: .active,
                        updatedAt: 1,
                        expiresAt: 2
                    )
                ),
            ])
        }
        #expect(try await other.app(id: app.id) == nil, "the failed batch's first change is undone")
    }
}
