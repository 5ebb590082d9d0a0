import Foundation
import HeraldServer
import Testing

/// Herald's configuration is resolved once: flags over environment over file over defaults, and
/// a file is checked key by key.
@Suite(.timeLimit(.minutes(1)))
struct ConfigurationTests {
    static func file(_ json: String) throws -> String {
        let path = NSTemporaryDirectory() + "herald-config-\(UUID().uuidString).json"
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test(
        "a key the configuration does not have is refused with its path",
        arguments: [
            (#"{"dispatcher": {"wrokers": 4}}"#, "dispatcher.wrokers"),
            (#"{"prot": 9000}"#, "prot"),
            (#"{"http": {"idel_timeout": 3}}"#, "http.idel_timeout"),
            (#"{"apps": [{"id": "com.example.a", "team_id": "T", "alert_titel": "x"}]}"#, "apps[0].alert_titel"),
            (
                #"{"adapters": {"genesys": {"secret": "0123456789abcdef", "authentification": "hmac"}}}"#,
                "adapters.genesys.authentification"
            ),
        ]
    )
    func unknownKeys(json: String, key: String) throws {
        let path = try Self.file(json)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: HeraldServerError.configuration("\(path): unknown key '\(key)'")) {
            try ConfigurationFile.load(path: path)
        }
    }

    @Test("known keys, free-form maps and nulls load")
    func knownKeys() throws {
        let path = try Self.file(
            #"""
            {"host": "0.0.0.0", "port": 9000, "apns": null, "dispatcher": {"workers": 4, "batch_size": 64},
             "adapters": {"cxone": {"secret": "0123456789abcdef", "customers": {"c-1": "alice"}}},
             "chat": {"first_push_delay": 0, "idle_end": 3600}, "sandbox": {"apns_port": 0}, "log_level": "debug"}
            """#
        )
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try ConfigurationFile.load(path: path)
        #expect(
            file.port == 9000 && file.dispatcher?.batchSize == 64
                && file.adapters?["cxone"]?.customers == ["c-1": "alice"]
        )
        let configuration = try HeraldConfiguration(layers: [file])
        #expect(configuration.host == "0.0.0.0" && configuration.workers == 4 && configuration.chatPushDelay == .zero)
        #expect(configuration.sandboxPorts.apns == 0 && configuration.sandboxPorts.fcm == 2196)
        #expect(configuration.logLevel == .debug)
        #expect(configuration.chatIdleEnd == .seconds(3600))
        #expect(configuration.relayConfiguration.chat.idleEnd == .seconds(3600))
        #expect(HeraldConfiguration().relayConfiguration.chat.idleEnd == .seconds(86_400), "the documented default")
    }

    @Test("on PostgreSQL the live channels are published under the node id; on SQLite they stay in memory")
    func liveChannelNode() throws {
        let path = try Self.file(
            #"{"database": {"url": "postgres://herald@db.internal:5432/herald"}, "node_id": "relay-a"}"#
        )
        defer { try? FileManager.default.removeItem(atPath: path) }
        let shared = try HeraldConfiguration(layers: [try ConfigurationFile.load(path: path)])
        #expect(shared.relayConfiguration.live.nodeID == "relay-a")
        #expect(shared.dispatcherConfiguration.owner == "relay-a")
        #expect(HeraldConfiguration().relayConfiguration.live.nodeID == nil)
        #expect(HeraldConfiguration().relayConfiguration.live.ackTimeout == .seconds(10), "the documented default")
    }

    @Test("flags win over the environment, which wins over the file, which wins over the defaults")
    func precedence() throws {
        var file = ConfigurationFile()
        file.port = 1111
        file.host = "10.0.0.1"
        file.data = "file-data"
        file.dispatcher = ConfigurationFile.Dispatcher()
        file.dispatcher?.workers = 3
        file.dispatcher?.batchSize = 100
        let environment = try ConfigurationFile.environment([
            "HERALD_PORT": "2222", "HERALD_HOST": "10.0.0.2", "HERALD_WORKERS": "5", "HERALD_UNRELATED": "x",
        ])
        var flags = ConfigurationFile()
        flags.port = 3333
        let configuration = try HeraldConfiguration(layers: [flags, environment, file])
        #expect(configuration.port == 3333)
        #expect(configuration.host == "10.0.0.2")
        #expect(configuration.workers == 5)
        // A nested section merges key by key: the environment's workers, the file's batch size.
        #expect(configuration.batchSize == 100)
        #expect(configuration.dataDirectory == "file-data")
        #expect(configuration.keysDirectory == "keys")
        #expect(try HeraldConfiguration(layers: []).port == 8080)
    }

    @Test("durations are whole seconds everywhere")
    func durations() throws {
        var file = ConfigurationFile()
        file.presenceTTL = 90
        file.messageRetention = 3600
        file.chat = ConfigurationFile.Chat()
        file.chat?.firstPushDelay = 5
        let configuration = try HeraldConfiguration(layers: [file])
        #expect(configuration.presenceTTL == .seconds(90))
        #expect(configuration.messageRetention == .seconds(3600))
        #expect(configuration.chatPushDelay == .seconds(5))
        #expect(configuration.relayConfiguration.defaultPresenceTTL == .seconds(90))
        #expect(configuration.relayConfiguration.messageRetention == .seconds(3600))
    }

    @Test(
        "values out of range are refused with the setting's name",
        arguments: [
            (#"{"port": 70000}"#, "the port must be between 0 and 65535"),
            (#"{"dispatcher": {"workers": 0}}"#, "workers must be between 1 and 64"),
            (#"{"chat": {"first_push_delay": 7200}}"#, "chat.first_push_delay must be between 0 and 3600 seconds"),
            (#"{"chat": {"idle_end": 59}}"#, "chat.idle_end must be between 60 seconds and 30 days"),
            (#"{"apns": {"key": "k.p8"}}"#, "--apns-team-id is needed with --apns-key"),
            (
                #"{"apns": {"key": "k.p8", "team_id": "T", "environment": "staging"}}"#,
                "--apns-environment must be development or production"
            ),
            (
                #"{"log_level": "loud"}"#,
                "unknown log level 'loud' (trace, debug, info, notice, warning, error, critical)"
            ),
            (#"{"http": {"header_read_timeout": 0}}"#, "http.header_read_timeout must be between 1 and 3600 seconds"),
            (#"{"http": {"idle_timeout": 0}}"#, "http.idle_timeout must be between 1 and 86400 seconds"),
            (#"{"http": {"max_connections": 0}}"#, "http.max_connections must be between 1 and 1000000"),
            // A network named without its credentials never falls back to the sandbox.
            (
                #"{"apns": {"key_id": "ABC123DEFG", "team_id": "T", "environment": "production"}}"#,
                "apns names 'key_id' but no key file (apns.key, --apns-key or HERALD_APNS_KEY): give the .p8 key, or leave APNs out to run the sandbox"
            ),
            (
                #"{"apns": {"url": "https://127.0.0.1:2197"}}"#,
                "apns names 'url' but no key file (apns.key, --apns-key or HERALD_APNS_KEY): give the .p8 key, or leave APNs out to run the sandbox"
            ),
            (
                #"{"fcm": {"ca": "ca.pem"}}"#,
                "fcm names 'ca' but no service account (fcm.service_account, --fcm-service-account or HERALD_FCM_SERVICE_ACCOUNT): give the account file, or leave FCM out"
            ),
        ]
    )
    func ranges(json: String, message: String) throws {
        let path = try Self.file(json)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: HeraldServerError.configuration(message)) {
            try HeraldConfiguration(layers: [try ConfigurationFile.load(path: path)])
        }
    }

    @Test("the HTTP limits: documented defaults, the file's section, the environment over the file")
    func httpLimits() throws {
        let defaults = HeraldConfiguration().http
        #expect(defaults.headerReadTimeout == .seconds(10))
        #expect(defaults.idleTimeout == .seconds(60))
        #expect(defaults.maxConnections == 512)
        let path = try Self.file(
            #"{"http": {"header_read_timeout": 5, "idle_timeout": 30, "max_connections": 100}}"#
        )
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try ConfigurationFile.load(path: path)
        let fromFile = try HeraldConfiguration(layers: [file]).http
        #expect(fromFile.headerReadTimeout == .seconds(5))
        #expect(fromFile.idleTimeout == .seconds(30))
        #expect(fromFile.maxConnections == 100)
        let environment = try ConfigurationFile.environment([
            "HERALD_HTTP_MAX_CONNECTIONS": "2000", "HERALD_HTTP_HEADER_READ_TIMEOUT": "3",
        ])
        let layered = try HeraldConfiguration(layers: [environment, file]).http
        #expect(layered.maxConnections == 2000)
        #expect(layered.headerReadTimeout == .seconds(3))
        #expect(layered.idleTimeout == .seconds(30))
    }

    @Test("an environment number that is not one is refused with the variable's name")
    func environmentNumbers() {
        #expect(throws: HeraldServerError.configuration("HERALD_PORT must be a whole number (got 'eighty')")) {
            try ConfigurationFile.environment(["HERALD_PORT": "eighty"])
        }
    }

    @Test("an APNs key names Apple's host for its environment unless a URL is given")
    func apnsHosts() throws {
        var file = ConfigurationFile()
        file.apns = ConfigurationFile.APNs()
        file.apns?.key = "keys/AuthKey_ABC.p8"
        file.apns?.teamID = "TEAM123456"
        #expect(try HeraldConfiguration(layers: [file]).apns?.url == HeraldConfiguration.appleDevelopment)
        file.apns?.environment = "production"
        #expect(try HeraldConfiguration(layers: [file]).apns?.url == HeraldConfiguration.appleProduction)
        file.apns?.url = "https://127.0.0.1:2197"
        #expect(try HeraldConfiguration(layers: [file]).apns?.url == "https://127.0.0.1:2197")
    }
}
