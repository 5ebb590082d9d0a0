import Foundation
import HeraldDomain
import HeraldServer
import Testing

/// A configuration file may be YAML as well as JSON: the same keys, the same refusals (unknown
/// keys and wrong types by their path), and in YAML the line too.
@Suite(.timeLimit(.minutes(1)))
struct YAMLConfigurationTests {
    static func file(_ text: String, extension name: String = "yaml") throws -> String {
        let path = NSTemporaryDirectory() + "herald-config-\(UUID().uuidString).\(name)"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func load(_ text: String, extension name: String = "yaml") throws -> ConfigurationFile {
        let path = try file(text, extension: name)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try ConfigurationFile.load(path: path)
    }

    /// The error `load` throws for `text`, with the temporary path taken out.
    static func error(_ text: String, extension name: String = "yaml") throws -> String? {
        let path = try file(text, extension: name)
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            _ = try ConfigurationFile.load(path: path)
            return nil
        } catch {
            return error.message.replacingOccurrences(of: path, with: "FILE")
        }
    }

    static let yaml = """
        # A relay node on the shared database.
        host: 0.0.0.0
        port: 9000
        keys_dir: /etc/herald/keys
        log_level: debug
        log_format: json
        durable: false
        message_retention: 86400
        apps:
          - id: com.example.chat
            team_id: ABCDE12345
            content_policy: full
            alert_title: "New message"
        apns:
          key: /etc/herald/keys/AuthKey_ABC123DEFG.p8
          team_id: ABCDE12345
          environment: production
        dispatcher:
          workers: 4
          batch_size: 128
        adapters:
          genesys:
            secret: "0123456789abcdef"
            customers: {c-1: alice}
        chat: {first_push_delay: 0, filtered_types: [typing, read]}
        database:
          url: postgres://herald@db:5432/herald
          pool_size: 20
        """

    @Test("a YAML file gives the same configuration as its JSON twin")
    func sameAsJSON() throws {
        let json = #"""
            {"host": "0.0.0.0", "port": 9000, "keys_dir": "/etc/herald/keys", "log_level": "debug",
             "log_format": "json", "durable": false, "message_retention": 86400,
             "apps": [{"id": "com.example.chat", "team_id": "ABCDE12345", "content_policy": "full",
                       "alert_title": "New message"}],
             "apns": {"key": "/etc/herald/keys/AuthKey_ABC123DEFG.p8", "team_id": "ABCDE12345",
                      "environment": "production"},
             "dispatcher": {"workers": 4, "batch_size": 128},
             "adapters": {"genesys": {"secret": "0123456789abcdef", "customers": {"c-1": "alice"}}},
             "chat": {"first_push_delay": 0, "filtered_types": ["typing", "read"]},
             "database": {"url": "postgres://herald@db:5432/herald", "pool_size": 20}}
            """#
        let fromYAML = try Self.load(Self.yaml)
        #expect(fromYAML == (try Self.load(json, extension: "json")))
        #expect(
            fromYAML.dispatcher?.workers == 4 && fromYAML.durable == false
                && fromYAML.apps?.first?.id == "com.example.chat"
        )
        let configuration = try HeraldConfiguration(layers: [fromYAML])
        #expect(configuration.logFormat == .json && configuration.workers == 4 && configuration.batchSize == 128)
        #expect(configuration.apns?.url == HeraldConfiguration.appleProduction)
    }

    @Test(
        "a key the configuration does not have is refused with its path and line",
        arguments: [
            ("dispatcher:\n  wrokers: 4\n", "unknown key 'dispatcher.wrokers' (line 2)"),
            ("port: 8080\nprot: 9000\n", "unknown key 'prot' (line 2)"),
            (
                "apps:\n  - id: com.example.a\n    team_id: T\n    alert_titel: x\n",
                "unknown key 'apps[0].alert_titel' (line 4)"
            ),
            ("http: {idel_timeout: 3}\n", "unknown key 'http.idel_timeout' (line 1)"),
        ]
    )
    func unknownKeys(yaml: String, message: String) throws {
        #expect(try Self.error(yaml) == "FILE: \(message)")
    }

    @Test(
        "a value of the wrong type is refused with its path and line",
        arguments: [
            ("dispatcher:\n  workers: four\n", "'dispatcher.workers' has the wrong type (line 2)"),
            // Quoted, a number is a string.
            ("port: \"8080\"\n", "'port' has the wrong type (line 1)"),
            ("host: 127.0.0.1\ndurable: maybe\n", "'durable' has the wrong type (line 2)"),
            ("apps: com.example.a\n", "'apps' has the wrong type (line 1)"),
        ]
    )
    func wrongTypes(yaml: String, message: String) throws {
        #expect(try Self.error(yaml) == "FILE: \(message)")
    }

    @Test("invalid YAML is refused on one line naming where")
    func invalidYAML() throws {
        let message = try #require(try Self.error("port: 8080\ndispatcher:\n  workers: [4\nhost: x\n"))
        #expect(message.hasPrefix("FILE is not valid YAML: line "), "\(message)")
        #expect(!message.contains("\n"))
        #expect(try Self.error("- 1\n- 2\n") == "FILE: the configuration must be a mapping of keys to values")
        #expect(
            try Self.error("port: 1\ndispatcher:\n  workers: 2\n  workers: 3\n")
                == "FILE is not valid YAML: 'workers' given twice in the mapping at line 3"
        )
    }

    @Test("the format follows the extension, else the first character")
    func formatByNameOrContent() throws {
        #expect(ConfigurationFile.Format(path: "a.yml", contents: Data("{}".utf8)) == .yaml)
        #expect(ConfigurationFile.Format(path: "a.json", contents: Data("port: 1".utf8)) == .json)
        #expect(ConfigurationFile.Format(path: "herald.conf", contents: Data("  \n{\"port\": 1}".utf8)) == .json)
        #expect(ConfigurationFile.Format(path: "herald.conf", contents: Data("port: 1\n".utf8)) == .yaml)
        // Without an extension, YAML content loads as YAML and JSON as JSON.
        #expect(try Self.load("port: 9001\n", extension: "conf").port == 9001)
        #expect(try Self.load(#"{"port": 9002}"#, extension: "conf").port == 9002)
        // JSON errors still say JSON.
        #expect(try Self.error(#"{"port": }"#, extension: "json") == "FILE is not valid JSON")
        // An empty YAML file is an empty configuration.
        #expect(try Self.load("# nothing yet\n") == ConfigurationFile())
    }

    @Test("log_format: the file's, HERALD_LOG_FORMAT over it, anything but text or json refused")
    func logFormat() throws {
        #expect(try HeraldConfiguration(layers: []).logFormat == .text, "the documented default")
        let file = try Self.load("log_format: json\n")
        #expect(try HeraldConfiguration(layers: [file]).logFormat == .json)
        let environment = try ConfigurationFile.environment(["HERALD_LOG_FORMAT": "text"])
        #expect(try HeraldConfiguration(layers: [environment, file]).logFormat == .text)
        #expect(throws: HeraldServerError.configuration("unknown log format 'xml' (text or json)")) {
            try HeraldConfiguration(layers: [try Self.load("log_format: xml\n")])
        }
    }
}

/// Deadlines in a configuration file: an app's rules and the relay's CallKit report window.
@Suite(.timeLimit(.minutes(1)))
struct DeadlineConfigurationTests {
    @Test("an app's deadlines and callkit_report_window are read; a window out of range is refused")
    func deadlines() throws {
        let file = try YAMLConfigurationTests.load(
            """
            callkit_report_window: 45
            apps:
              - id: com.example.chat
                team_id: ABCDE12345
                deadlines: [{kind: message, after: 120, action: other_devices}]
            """
        )
        #expect(file.apps?.first?.deadlines == [DeadlineRule(kind: .message, after: 120, action: .otherDevices)])
        let configuration = try HeraldConfiguration(layers: [file])
        #expect(configuration.relayConfiguration.deadlines.callKitReportWindow == .seconds(45))
        #expect(HeraldConfiguration().relayConfiguration.deadlines.callKitReportWindow == .seconds(30))
        let wrong = try YAMLConfigurationTests.load("callkit_report_window: 0\n")
        #expect(throws: HeraldServerError.configuration("callkit_report_window must be between 1 and 600 seconds")) {
            try HeraldConfiguration(layers: [wrong])
        }
    }
}
