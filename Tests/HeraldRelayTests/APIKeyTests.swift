import Foundation
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldSandbox
import HeraldStore
import Testing

/// The key rules, without a store: what a bearer token is among the stored keys, and which new
/// keys are refused.
@Suite("API key rules")
struct APIKeyRuleTests {
    static let app = APIKeyRecord(
        id: "0123456789abcdef",
        name: "crm",
        appID: "com.example.chat",
        scopes: [.send],
        secretDigest: [],
        createdAt: 1
    )

    @Test func aTokenRoundTripsAndOnlyItsSecretMatches() throws {
        let token = APIKeyToken.make()
        let parsed = try #require(APIKeyToken(parsing: Array(token.text.utf8)))
        #expect(parsed == token)
        #expect(token.text.hasPrefix("hk_\(token.id)_"))

        var record = Self.app
        record.id = token.id
        record.secretDigest = token.digest
        let keyring = APIKeyring([record])
        #expect(keyring.lookup(Array(token.text.utf8)) == .caller(Caller(record)))

        // The same id with another secret is no key; a revoked key says so.
        let other = String(token.text.dropLast()) + (token.text.hasSuffix("0") ? "1" : "0")
        #expect(keyring.lookup(Array(other.utf8)) == .unknown)
        record.revokedAt = 5
        keyring.replace(with: [record])
        #expect(keyring.lookup(Array(token.text.utf8)) == .revoked(id: token.id))
        // A key the keyring does not hold (made elsewhere, not read yet) is unknown.
        keyring.replace(with: [])
        #expect(keyring.lookup(Array(token.text.utf8)) == .unknown)
    }

    @Test(arguments: [
        "",
        "test-api-key-0123456789",  // the configured key's shape
        "hk_previous-key-0123456789",
        "hk_0123456789abcdef_" + String(repeating: "a", count: 63),  // a secret too short
        "hk_0123456789abcdef_" + String(repeating: "a", count: 65),
        "hk_0123456789ABCDEF_" + String(repeating: "a", count: 64),  // upper case
        "hk_0123456789abcdef-" + String(repeating: "a", count: 64),  // no separator
        "xx_0123456789abcdef_" + String(repeating: "a", count: 64),
        "hk_0123456789abcdef_" + String(repeating: "g", count: 64),
    ])
    func whatIsNotShapedLikeAKeyIsNotLookedUp(_ token: String) {
        #expect(APIKeyring([Self.app]).lookup(Array(token.utf8)) == .notAKey)
    }

    @Test func callersActForTheirAppAndKeepTheirOwnIdempotencyKeys() {
        let app = Caller(Self.app)
        #expect(app.permits(app: "com.example.chat"))
        #expect(!app.permits(app: "com.example.other"))
        #expect(Caller.configuredKey.permits(app: "com.example.other"))
        #expect(app.actor == "key:0123456789abcdef")
        #expect(Caller.configuredKey.actor == "api_key")
        #expect(RelayIngest.storedKey(message: "k1", app: app.appID) == "message:app:com.example.chat:k1")
        #expect(RelayIngest.storedKey(message: "k1", app: Caller.configuredKey.appID) == "message:k1")
    }

    @Test(
        arguments: [
            (RelayKeys.NewKey(name: "crm", appID: "com.example.chat", scopes: [.send]), nil),
            (RelayKeys.NewKey(name: "ops", appID: nil, scopes: Set(APIScope.allCases)), nil),
            (RelayKeys.NewKey(name: "", appID: nil, scopes: [.send]), "name"),
            (RelayKeys.NewKey(name: "a b", appID: nil, scopes: [.send]), "name"),
            (RelayKeys.NewKey(name: String(repeating: "a", count: 65), appID: nil, scopes: [.send]), "name"),
            (RelayKeys.NewKey(name: "crm", appID: "com.unknown", scopes: [.send]), "app"),
            (RelayKeys.NewKey(name: "crm", appID: nil, scopes: []), "scopes"),
            (RelayKeys.NewKey(name: "crm", appID: nil, scopes: [.send], ratePerSecond: 0), "rate"),
            (RelayKeys.NewKey(name: "crm", appID: nil, scopes: [.send], ratePerSecond: -1), "rate"),
            (RelayKeys.NewKey(name: "crm", appID: nil, scopes: [.send], burst: 10), "burst"),
            (RelayKeys.NewKey(name: "crm", appID: nil, scopes: [.send], ratePerSecond: 5, burst: 0), "burst"),
            (RelayKeys.NewKey(name: "crm", appID: nil, scopes: [.send], ratePerSecond: 5, burst: 20), nil),
        ] as [(RelayKeys.NewKey, String?)]
    )
    func newKeysAreChecked(_ key: RelayKeys.NewKey, refusedField: String?) {
        #expect(RelayKeys.refusal(key, apps: ["com.example.chat"])?.field == refusedField)
    }
}

/// Per-app keys through the relay's HTTP API on loopback, against the sandbox.
@Suite("API keys", .timeLimit(.minutes(3)))
struct APIKeyTests {
    static let other = "com.example.other"

    /// Registers a second app, and makes a key on the relay as `herald keys api create` does.
    static func key(
        _ harness: RelayHarness,
        app: String?,
        scopes: Set<APIScope>
    ) async throws -> (record: APIKeyRecord, token: String) {
        let made = try await harness.relay.keys.create(
            RelayKeys.NewKey(name: "test", appID: app, scopes: scopes),
            actor: "cli"
        )
        return (made.0, made.1.text)
    }

    static func registerOther(_ harness: RelayHarness) async throws {
        let reply = try await harness.call(.PUT, "/v1/apps/\(other)", body: #"{"team_id":"TEAM123456"}"#)
        try #require(reply.status == 200, "\(reply.text)")
        try harness.core.register(app: SandboxApp(bundleID: other, teamID: RelayHarness.teamID))
    }

    static func message(_ key: String? = nil, to user: String = "alice") -> String {
        let idempotency = key.map { #","idempotency_key":"\#($0)""# } ?? ""
        return
            #"{"to":"\#(user)","from":{"id":"agent-1","name":"Agent"},"conversation":"c1","text":"hello"\#(idempotency)}"#
    }

    @Test func anAppKeyReachesOnlyItsAppsDevices() async throws {
        try await RelayHarness.with { harness in
            try await Self.registerOther(harness)
            let chat = try await harness.phone(user: "alice")
            let other = try await harness.phone(user: "alice", bundleID: Self.other)
            let key = try await Self.key(harness, app: RelayHarness.bundleID, scopes: [.send, .read])

            let sent = try await harness.call(.POST, "/v1/messages", auth: .bearer(key.token), body: Self.message("k1"))
            #expect(sent.status == 202, "\(sent.text)")
            let receipt = try sent.decode(IngestReceipt.self)
            #expect(receipt.pushes.map(\.deviceID) == [chat.deviceID])

            // The admin key reaches both; the same idempotency key is the admin's own, not a repeat.
            let admin = try await harness.call(.POST, "/v1/messages", body: Self.message("k1"))
            let both = try admin.decode(IngestReceipt.self)
            #expect(Set(both.pushes.map(\.deviceID)) == [chat.deviceID, other.deviceID])
            #expect(both.duplicate != true)

            // Another app's push is not there for this key; its own is.
            let otherPush = try #require(both.pushes.first { $0.deviceID == other.deviceID })
            let hidden = try await harness.call(.GET, "/v1/pushes/\(otherPush.pushID)", auth: .bearer(key.token))
            #expect(hidden.status == 404)
            let own = try await harness.call(.GET, "/v1/pushes/\(receipt.pushes[0].pushID)", auth: .bearer(key.token))
            #expect(own.status == 200)
            let device = try await harness.call(.GET, "/v1/devices/\(other.deviceID)", auth: .bearer(key.token))
            #expect(device.status == 404)
            let devices = try await harness.call(.GET, "/v1/users/alice/devices", auth: .bearer(key.token))
            let listed = try devices.decode(UserDevicesView.self)
            #expect(listed.devices.map(\.deviceID) == [chat.deviceID])
        }
    }

    @Test func scopesAndAppsAreEnforced() async throws {
        try await RelayHarness.with { harness in
            try await Self.registerOther(harness)
            let phone = try await harness.phone(user: "bob")
            let reader = try await Self.key(harness, app: RelayHarness.bundleID, scopes: [.read])
            let manager = try await Self.key(harness, app: RelayHarness.bundleID, scopes: [.apps, .devices])

            let send = try await harness.call(.POST, "/v1/messages", auth: .bearer(reader.token), body: Self.message())
            #expect(send.status == 403)
            #expect(send.json["reason"] as? String == "the API key \(reader.record.id) lacks the 'send' scope")

            let app = #"{"team_id":"TEAM123456"}"#
            let own = try await harness.call(
                .PUT,
                "/v1/apps/\(RelayHarness.bundleID)",
                auth: .bearer(manager.token),
                body: app
            )
            #expect(own.status == 200, "\(own.text)")
            let foreign = try await harness.call(
                .PUT,
                "/v1/apps/\(Self.other)",
                auth: .bearer(manager.token),
                body: app
            )
            #expect(foreign.status == 403)

            // A device of another app cannot be activated with this app's key.
            let activation = ActivationRequest(
                userID: "bob",
                app: Self.other,
                platform: .ios,
                publicKey: KeyPair.generate().publicKey.base64,
                messagingToken: try harness.core.registerDevice(bundleID: Self.other).messagingToken
            )
            let refused = try await harness.call(
                .POST,
                "/v1/activations",
                auth: .bearer(manager.token),
                json: activation
            )
            #expect(refused.status == 403)

            let deleted = try await harness.call(.DELETE, "/v1/devices/\(phone.deviceID)", auth: .bearer(manager.token))
            #expect(deleted.status == 204)

            // Only an admin key writes a chat's transcript.
            let chat = try await harness.call(
                .POST,
                "/v1/chats/c1/end",
                auth: .bearer(try await Self.key(harness, app: RelayHarness.bundleID, scopes: [.send]).token)
            )
            #expect(chat.status == 403)
        }
    }

    @Test func aRevokedKeyIsRefusedAndTheAuditLogSaysWhoDidWhat() async throws {
        try await RelayHarness.with { harness in
            let key = try await Self.key(harness, app: RelayHarness.bundleID, scopes: [.send, .read, .devices])
            let phone = try await harness.phone(user: "carol")
            let sent = try await harness.call(
                .POST,
                "/v1/messages",
                auth: .bearer(key.token),
                body: Self.message(to: "carol")
            )
            #expect(sent.status == 202)
            _ = try await harness.call(.DELETE, "/v1/devices/\(phone.deviceID)", auth: .bearer(key.token))

            #expect(try await harness.relay.keys.revoke(id: key.record.id, actor: "cli"))
            let refused = try await harness.call(.POST, "/v1/messages", auth: .bearer(key.token), body: Self.message())
            #expect(refused.status == 401)
            #expect(refused.json["reason"] as? String == "the API key \(key.record.id) was revoked")
            #expect(try await harness.relay.keys.revoke(id: key.record.id, actor: "cli") == false)

            let audit = try await harness.call(.GET, "/v1/audit")
            #expect(audit.status == 200, "\(audit.text)")
            let entries = try #require(audit.json["entries"] as? [[String: Any]])
            let lines = entries.map { "\($0["actor"] ?? "") \($0["action"] ?? "") \($0["target"] ?? "")" }
            #expect(
                lines == [
                    "cli key.revoked \(key.record.id)",
                    "key:\(key.record.id) device.deactivated \(phone.deviceID)",
                    "api_key device.activated \(phone.deviceID)",
                    "cli key.created \(key.record.id)",
                ]
            )
            // No secret in the log: neither the token nor its digest.
            #expect(!audit.text.contains(key.token))
        }
    }
}
