import Foundation
import HeraldServer
import HeraldStoreSQLite
import Logging
import Testing

/// `herald check` in process, on SQLite: what a first start would make is `ok`, a database the
/// relay migrated shows its schema, and nothing is written by the check. The hosts and
/// PostgreSQL are checked against real ones in Tests/interop/test_operator.py.
@Suite(.timeLimit(.minutes(1)))
struct ConfigurationCheckTests {
    static func findings(_ configuration: HeraldConfiguration, environment: [String: String] = [:]) async -> [String] {
        var logger = Logger(label: "test.check")
        logger.logLevel = .critical
        let check = ConfigurationCheck(configuration: configuration, environment: environment, logger: logger)
        return await check.run { _ in }.map(\.description)
    }

    @Test("on SQLite, keys and a database not made yet are ok; an opened database shows its schema")
    func sqlite() async throws {
        let directory = NSTemporaryDirectory() + "herald-check-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = HeraldConfiguration()
        configuration.keysDirectory = directory + "/keys"
        configuration.dataDirectory = directory + "/data"
        let first = await Self.findings(configuration)
        #expect(
            first == [
                "ok   master key \(directory)/keys/master.key: not there yet, made on first start",
                "ok   api key \(directory)/keys/api.key: not there yet, made on first start",
                "ok   database \(directory)/data/herald.sqlite (not there yet, made on first start)",
            ]
        )
        // The check made nothing.
        #expect(!FileManager.default.fileExists(atPath: directory))

        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        var logger = Logger(label: "test.check")
        logger.logLevel = .critical
        _ = try SQLiteStore(configuration: .init(path: configuration.databasePath), logger: logger)
        try FileManager.default.createDirectory(atPath: directory + "/keys", withIntermediateDirectories: true)
        try Data("short\n".utf8).write(to: URL(fileURLWithPath: directory + "/keys/api.key"))
        let second = await Self.findings(configuration, environment: ["HERALD_MASTER_KEY": "not base64"])
        #expect(second.count == 3)
        #expect(second[0].hasPrefix("FAIL master key HERALD_MASTER_KEY: "), "\(second[0])")
        #expect(second[1] == "FAIL api key \(directory)/keys/api.key: shorter than 16 characters")
        let database = second[2]
        #expect(database.hasPrefix("ok   database \(directory)/data/herald.sqlite (schema v"), "\(database)")
        #expect(!database.contains("migrated"), "a store that opened is at the latest version: \(database)")
    }

    /// Runs `body` with a directory holding the key AuthKey_KEYAAAAAAA.p8 (team TEAMAAAAAA) and
    /// the configuration `yaml` makes of it, given the directory.
    static func withKey(
        _ yaml: (String) -> String,
        _ body: (String, HeraldConfiguration) async throws -> Void
    )
        async throws
    {
        let directory = NSTemporaryDirectory() + "herald-check-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try DevelopmentKeys.makeAPNsKey(in: directory, keyID: "KEYAAAAAAA", teamID: "TEAMAAAAAA", overwrite: false)
        let file = try ConfigurationFile.parse(Data(yaml(directory).utf8), format: .yaml, path: "herald.yaml")
        try await body(directory, try HeraldConfiguration(layers: [file]))
    }

    @Test("offline, the hosts are listed as skipped, not probed, and the check passes")
    func offline() async throws {
        let yaml = { (directory: String) in
            """
            keys_dir: \(directory)/keys
            data: \(directory)/data
            apns: {key: \(directory)/AuthKey_KEYAAAAAAA.p8, team_id: TEAMAAAAAA, url: "https://127.0.0.1:1"}
            """
        }
        try await Self.withKey(yaml) { _, configuration in
            var logger = Logger(label: "test.check")
            logger.logLevel = .critical
            var check = ConfigurationCheck(configuration: configuration, environment: [:], logger: logger)
            // Probed, the closed port fails.
            #expect(await check.run { _ in }.contains { !$0.passed && $0.subject == "apns" })
            check.offline = true
            let findings = await check.run { _ in }
            #expect(findings.allSatisfy { $0.passed }, "\(findings)")
            #expect(findings.last?.description == "skip apns https://127.0.0.1:1: not probed (--offline)")
        }
    }

    @Test("a fleet: each APNs key and FCM account is checked under its name")
    func fleet() async throws {
        let yaml = { (directory: String) in
            """
            keys_dir: \(directory)/keys
            data: \(directory)/data
            apns_keys:
              - {name: alpha, key: \(directory)/AuthKey_KEYAAAAAAA.p8, team_id: TEAMAAAAAA, url: "https://127.0.0.1:1"}
              - {name: beta, key: \(directory)/AuthKey_MISSING000.p8, team_id: TEAMBBBBBB, url: "https://127.0.0.1:1"}
            fcm_accounts:
              - {name: beta-project, service_account: \(directory)/missing.json, url: "https://127.0.0.1:1"}
            """
        }
        try await Self.withKey(yaml) { directory, configuration in
            try await Self.fleetFindings(directory: directory, lines: await Self.findings(configuration))
        }
    }

    static func fleetFindings(directory: String, lines: [String]) async throws {
        let keys = lines.filter { $0.contains("apns key") || $0.contains("fcm account") }
        #expect(
            keys == [
                "ok   apns key alpha \(directory)/AuthKey_KEYAAAAAAA.p8 (key KEYAAAAAAA, team TEAMAAAAAA)",
                "FAIL apns key beta \(directory)/AuthKey_MISSING000.p8: cannot be read",
            ] + keys.filter { $0.hasPrefix("FAIL fcm account beta-project \(directory)/missing.json") },
            "\(lines)"
        )
        #expect(keys.count == 3, "\(lines)")
        #expect(
            lines.contains { $0.hasPrefix("FAIL apns alpha ") } && lines.contains { $0.hasPrefix("FAIL apns beta ") }
        )
    }

    @Test("on a shared database a missing key fails: every node needs the same one")
    func sharedKeysMustExist() async throws {
        let directory = NSTemporaryDirectory() + "herald-check-\(UUID().uuidString)"
        var layer = ConfigurationFile()
        layer.keysDir = directory
        layer.database = ConfigurationFile.Database()
        // A password, and a port nothing listens on.
        layer.database?.url = "postgres://herald:hunter2-secret@127.0.0.1:1/herald"
        let lines = await Self.findings(try HeraldConfiguration(layers: [layer]))
        #expect(
            lines == [
                "FAIL master key \(directory)/master.key: missing (every node on the shared database needs the same one)",
                "FAIL api key \(directory)/api.key: missing (every node on the shared database needs the same one)",
                "FAIL database postgres://herald@127.0.0.1:1/herald: cannot connect: connection refused",
            ]
        )
        #expect(!lines.joined().contains("hunter2"))
    }
}
