import ArgumentParser
import Foundation
import HeraldServer
import Logging

/// `herald check`: validates a configuration and reaches what it names, before a start.
struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a configuration: its keys, the files it names, the database and the push hosts.",
        discussion: """
            Takes the flags, environment and --config file `herald serve` and `herald relay` take, \
            resolves them the same way, and prints one line per check, `ok` or `FAIL`: the \
            configuration itself (unknown keys and wrong types are refused with their path), the \
            master key, the API key, the APNs key, the FCM service account, CA files and the \
            provider secret it names, the database (SQLite opens, PostgreSQL connects; its schema \
            is not newer than this build), and the APNs, FCM and provider hosts (TLS, HTTP/2 for \
            APNs); with --offline the hosts are listed as `skip`, not probed. Writes nothing and \
            makes no key. Exit status 0 when every check passes, 64 when the configuration itself \
            is refused, 1 otherwise. Passwords and secrets are never printed.
            """
    )

    @OptionGroup var relay: RelayOptions

    @OptionGroup var apns: APNsOptions

    @OptionGroup var fcm: FCMOptions

    @Option(
        name: .customLong("provider-url"),
        help: "A remote provider's base URL, as `herald relay` takes it (repeatable). (HERALD_PROVIDER_URL)"
    )
    var providerURLs: [String] = []

    @Option(name: .customLong("provider-secret-file"), help: "The file with the provider's bearer secret.")
    var providerSecretFile: String?

    @Option(help: "Seconds each connection may take.")
    var timeout: Int = 5

    @Flag(
        help: "Leave the APNs, FCM and provider hosts unprobed (a node without egress or DNS at boot still starts)."
    )
    var offline = false

    func validate() throws {
        guard (1...120).contains(timeout) else { throw ValidationError("--timeout must be between 1 and 120") }
    }

    func run() async throws {
        var layer = ConfigurationFile()
        layer.apns = apns.layer
        layer.fcm = fcm.layer
        layer.provider = .flags(urls: providerURLs, secretFile: providerSecretFile)
        let environment = ProcessInfo.processInfo.environment
        let file = RelayOptions.configFile(relay.config, environment: environment)
        let configuration: HeraldConfiguration
        do {
            configuration = try relay.resolve(command: layer)
        } catch let error as ValidationError {
            print("FAIL configuration \(error.message)")
            // As every command refuses a configuration: EX_USAGE.
            throw ExitCode(64)
        }
        if let file {
            let format = FileManager.default.contents(atPath: file).map {
                ConfigurationFile.Format(path: file, contents: $0)
            }
            print("ok   configuration \(file) (\(format?.rawValue ?? "?"), with the flags and environment over it)")
        } else {
            print("ok   configuration flags and environment (no --config file)")
        }
        fflush(nil)
        var logger = Logger(label: "herald.check")
        logger.logLevel = .critical
        var check = ConfigurationCheck(configuration: configuration, environment: environment, logger: logger)
        check.timeout = .seconds(timeout)
        check.offline = offline
        let findings = await check.run { finding in
            print(finding)
            fflush(nil)
        }
        if findings.contains(where: { !$0.passed }) { throw ExitCode.failure }
    }
}
