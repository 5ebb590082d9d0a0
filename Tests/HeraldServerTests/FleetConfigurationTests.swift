import Foundation
import HeraldPush
import HeraldServer
import HeraldStore
import Testing

/// A fleet's configuration: several APNs keys and FCM accounts, each named; the single flags'
/// key and account stay valid as the one named `default`; apps name the ones they use.
@Suite(.timeLimit(.minutes(1)))
struct FleetConfigurationTests {
    static func resolve(_ yaml: String) throws(HeraldServerError) -> HeraldConfiguration {
        let file = try ConfigurationFile.parse(Data(yaml.utf8), format: .yaml, path: "fleet.yaml")
        return try HeraldConfiguration(layers: [file])
    }

    static let fleet = """
        apns:
          key: keys/AuthKey_AAAAAAAAAA.p8
          team_id: TEAMAAAAAA
        apns_keys:
          - name: team-b
            key: keys/AuthKey_BBBBBBBBBB.p8
            team_id: TEAMBBBBBB
            environment: production
          - name: team-c
            key: keys/c.p8
            key_id: CCCCCCCCCC
            team_id: TEAMCCCCCC
            url: https://127.0.0.1:2197
            production_url: https://127.0.0.1:2195
        fcm:
          service_account: keys/a.json
        fcm_accounts:
          - name: project-b
            service_account: keys/b.json
            url: https://127.0.0.1:2196
        apps:
          - id: com.example.a
            team_id: TEAMAAAAAA
          - id: com.example.b
            team_id: TEAMBBBBBB
            apns_key: team-b
            fcm_account: project-b
            apns_environment: production
        """

    @Test("several keys and accounts resolve, each with its name and its environments' hosts")
    func severalKeys() throws {
        let configuration = try Self.resolve(Self.fleet)
        #expect(configuration.apnsKeys.map(\.name) == ["default", "team-b", "team-c"])
        #expect(configuration.apns?.name == "default", "the flags' key is the default")
        let a = configuration.apnsKeys[0]
        #expect(
            a.urls == [
                .development: HeraldConfiguration.appleDevelopment, .production: HeraldConfiguration.appleProduction,
            ]
        )
        #expect(a.environment == "development" && a.url == HeraldConfiguration.appleDevelopment)
        let b = configuration.apnsKeys[1]
        #expect(
            b.teamID == "TEAMBBBBBB" && b.environment == "production" && b.url == HeraldConfiguration.appleProduction
        )
        let c = configuration.apnsKeys[2]
        #expect(c.urls == [.development: "https://127.0.0.1:2197", .production: "https://127.0.0.1:2195"])
        #expect(c.keyID == "CCCCCCCCCC")
        #expect(configuration.fcmAccounts.map(\.name) == ["default", "project-b"])
        #expect(configuration.fcmAccounts[1].url == "https://127.0.0.1:2196")
        let app = try #require(configuration.apps.first { $0.id == "com.example.b" })
        #expect(app.apnsKey == "team-b" && app.fcmAccount == "project-b" && app.apnsEnvironment == .production)
        #expect(configuration.apps.first { $0.id == "com.example.a" }?.apnsKey == nil)
    }

    @Test("a key given another server's URL serves that environment only, unless the other's is given")
    func customURLServesItsEnvironment() throws {
        let configuration = try Self.resolve(
            """
            apns: {key: k.p8, key_id: KKKKKKKKKK, team_id: TTTTTTTTTT, url: "https://127.0.0.1:9000"}
            """
        )
        #expect(configuration.apnsKeys[0].urls == [.development: "https://127.0.0.1:9000"])
    }

    @Test("the single flags' key and account behave as before: one entry named default")
    func singleKeyIsTheDefault() throws {
        var layer = ConfigurationFile()
        layer.apns = ConfigurationFile.APNs()
        layer.apns?.key = "keys/AuthKey_X.p8"
        layer.apns?.teamID = "TEAM"
        layer.apns?.environment = "production"
        layer.fcm = ConfigurationFile.FCM()
        layer.fcm?.serviceAccount = "keys/fcm.json"
        let configuration = try HeraldConfiguration(layers: [layer])
        #expect(configuration.apnsKeys.count == 1 && configuration.apns?.name == "default")
        #expect(configuration.apns?.url == HeraldConfiguration.appleProduction)
        #expect(configuration.fcm?.name == "default" && configuration.fcm?.url == HeraldConfiguration.googleFCM)
        #expect(HeraldConfiguration().apnsKeys.isEmpty && HeraldConfiguration().apns == nil)
    }

    @Test("with several keys and none named default, the only one is the default; else there is none")
    func defaultKey() throws {
        let one = try Self.resolve("apns_keys: [{name: solo, key: s.p8, team_id: TEAMSSSSSS}]")
        #expect(one.apns?.name == "solo")
        let two = try Self.resolve(
            "apns_keys: [{name: a, key: a.p8, team_id: TEAMAAAAAA}, {name: b, key: b.p8, team_id: TEAMBBBBBB}]"
        )
        #expect(two.apns == nil && two.apnsKeys.count == 2)
    }

    @Test(
        "bad fleets are refused with a message naming the entry",
        arguments: [
            (
                "apns_keys: [{name: a, key: a.p8, team_id: T}, {name: a, key: b.p8, team_id: U}]",
                "apns_keys[1]: the name 'a' is given to two APNs keys"
            ),
            (
                "apns: {key: a.p8, team_id: T}\napns_keys: [{name: default, key: b.p8, team_id: U}]",
                "apns_keys[0]: the name 'default' is given to two APNs keys"
            ),
            ("apns_keys: [{key: a.p8, team_id: T}]", "apns_keys[0]: a name is needed (apps name the key they use)"),
            ("apns_keys: [{name: a, team_id: T}]", "apns_keys[0] (a): the key (.p8 file) is missing"),
            ("apns_keys: [{name: a, key: a.p8}]", "apns_keys (a): team_id is missing"),
            (
                "apns_keys: [{name: a, key: a.p8, team_id: T, environment: staging}]",
                "apns_keys (a): environment must be development or production"
            ),
            (
                "fcm_accounts: [{name: p, service_account: a.json}, {name: p, service_account: b.json}]",
                "fcm_accounts[1]: the name 'p' is given to two FCM accounts"
            ),
            ("fcm_accounts: [{name: p}]", "fcm_accounts[0] (p): the service_account file is missing"),
            (
                "apns_keys: [{name: a, key: a.p8, team_id: T}]\napps: [{id: com.example.x, team_id: T, apns_key: b}]",
                "app com.example.x: no APNs key named 'b' (configured: a)"
            ),
            (
                "fcm_accounts: [{name: p, service_account: a.json}]\napps: [{id: com.example.x, team_id: T, fcm_account: q}]",
                "app com.example.x: no FCM account named 'q' (configured: p)"
            ),
        ]
    )
    func refused(yaml: String, message: String) {
        #expect(throws: HeraldServerError.configuration(message)) {
            try Self.resolve(yaml)
        }
    }

    @Test("an unknown key inside an apns_keys entry is named with its path")
    func unknownKeyInEntry() {
        #expect(throws: HeraldServerError.configuration("fleet.yaml: unknown key 'apns_keys[0].team' (line 1)")) {
            try Self.resolve("apns_keys: [{name: a, key: a.p8, team: T}]")
        }
    }

    @Test("an app's environment must be one of APNs' two")
    func badAppEnvironment() {
        #expect(throws: HeraldServerError.self) {
            try Self.resolve("apps: [{id: com.example.x, team_id: T, apns_environment: staging}]")
        }
    }
}
