import ArgumentParser
import Foundation
import HeraldServer
import Logging

/// The APNs flags, named alike in every command (`herald serve`, `herald provider`, `herald bench
/// provider`); the shorter names of earlier releases still work. Each is unset unless given, so
/// the environment and the configuration file can fill it.
struct APNsOptions: ParsableArguments {
    @Option(
        name: [.customLong("apns-key"), .customLong("key")],
        help: "Apple's AuthKey_<KEYID>.p8 (ES256 provider key). (HERALD_APNS_KEY)"
    )
    var key: String?

    @Option(
        name: [.customLong("apns-key-id"), .customLong("key-id")],
        help: "The key id; read from the file name when omitted. (HERALD_APNS_KEY_ID)"
    )
    var keyID: String?

    @Option(
        name: [.customLong("apns-team-id"), .customLong("team-id")],
        help: "The team id the key belongs to. (HERALD_APNS_TEAM_ID)"
    )
    var teamID: String?

    @Option(
        name: [.customLong("apns-environment"), .customLong("environment")],
        help: "development (api.sandbox.push.apple.com, the default) or production. (HERALD_APNS_ENVIRONMENT)"
    )
    var environment: String?

    @Option(
        name: .customLong("apns-url"),
        help: "Another APNs endpoint, such as the local sandbox (https://127.0.0.1:2197). (HERALD_APNS_URL)"
    )
    var apnsURL: String?

    @Option(
        name: [.customLong("apns-ca"), .customLong("ca")],
        help: "A CA certificate (PEM) to trust, such as keys/sandbox-ca.pem. (HERALD_APNS_CA)"
    )
    var caFile: String?

    @Option(
        name: [.customLong("apns-connections"), .customLong("connections")],
        help: "HTTP/2 connections to APNs (default 2)."
    )
    var connections: Int?

    @Option(
        name: [.customLong("apns-request-timeout"), .customLong("request-timeout")],
        help: "Seconds one APNs attempt may take (default 10)."
    )
    var requestTimeout: Int?

    func validate() throws {
        if let environment, !["development", "production"].contains(environment) {
            throw ValidationError("--apns-environment must be development or production")
        }
        if let connections, !(1...64).contains(connections) {
            throw ValidationError("--apns-connections must be between 1 and 64")
        }
    }

    /// What these flags set, as a configuration layer.
    var layer: ConfigurationFile.APNs? {
        var apns = ConfigurationFile.APNs()
        apns.key = key
        apns.keyID = keyID
        apns.teamID = teamID
        apns.environment = environment
        apns.url = apnsURL
        apns.ca = caFile
        apns.connections = connections
        apns.requestTimeout = requestTimeout
        return apns == ConfigurationFile.APNs() ? nil : apns
    }

    /// The APNs settings from these flags over the environment; an error without a key and team.
    func resolved() throws -> HeraldConfiguration.APNs {
        var flags = ConfigurationFile()
        flags.apns = layer
        let configuration = try HeraldServerError.validating {
            try HeraldConfiguration(layers: [
                flags, try ConfigurationFile.environment(ProcessInfo.processInfo.environment),
            ])
        }
        guard let apns = configuration.apns else {
            throw ValidationError("--apns-key and --apns-team-id are needed for APNs")
        }
        return apns
    }
}

/// `herald provider`: the APNs provider as its own service, for relays to post batches to.
struct ProviderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provider",
        abstract: "Run the provider stage: take push batches over HTTP and send them to APNs and FCM.",
        discussion: """
            The only part that holds Apple's and Google's credentials. Relays POST /v1/push/batch with \
            `authorization: bearer <secret>` and get each push's outcome: delivered, token_dead \
            (drop the token), failed (with APNs' reason), retry_later or expired. The secret comes \
            from HERALD_PROVIDER_SECRET or --secret-file; when neither exists, a new one is written \
            to --secret-file (mode 0600). See docs/provider.md.
            """
    )

    @OptionGroup var apns: APNsOptions

    @OptionGroup var fcm: FCMOptions

    @Option(help: "The address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "The port to listen on; 0 picks one.")
    var port: Int = 2199

    @Option(name: .customLong("secret-file"), help: "The file holding the bearer secret relays must send.")
    var secretFile: String = "keys/provider.secret"

    @Option(
        name: .customLong("token-cache"),
        help:
            "Where the provider token is kept (0600) so a restart reuses it; APNs refuses a new one within 20 minutes. With --database only read, once."
    )
    var tokenCache: String = "data/provider-token"

    @Option(
        help:
            "A PostgreSQL database the providers of one key share, postgres://user[:password]@host[:port]/database: the APNs provider token is kept there (sealed) and used by all of them, instead of --token-cache. (HERALD_DATABASE_URL)"
    )
    var database: String?

    @OptionGroup var logging: LoggingOptions

    @OptionGroup var http: HTTPOptions

    @Option(
        help:
            "A YAML or JSON configuration file (docs/relay.md): its apns, apns_keys, fcm and fcm_accounts give a fleet's keys and accounts; flags and the environment win. (HERALD_CONFIG)"
    )
    var config: String?

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        try logging.checkFormat()
        try logging.checkLevel()
        _ = try resolve()
    }

    /// These flags over the environment, with at least one network.
    func resolve() throws -> HeraldConfiguration {
        var flags = ConfigurationFile()
        flags.apns = apns.layer
        flags.fcm = fcm.layer
        flags.http = http.layer
        flags.logLevel = logging.logLevel
        flags.logFormat = logging.logFormat
        flags.database = ConfigurationFile.Database(url: database)
        return try HeraldServerError.validating {
            let configuration = try HeraldConfiguration(
                layers: RelayOptions.layers(
                    flags: flags,
                    config: config,
                    environment: ProcessInfo.processInfo.environment
                )
            )
            guard !configuration.apnsKeys.isEmpty || !configuration.fcmAccounts.isEmpty else {
                throw HeraldServerError.configuration(
                    "give --apns-key and --apns-team-id (APNs), --fcm-service-account (FCM), or both"
                )
            }
            return configuration
        }
    }

    func run() async throws {
        let configuration = try resolve()
        let format = configuration.logFormat
        format.bootstrap()
        let listener = ProviderListener(host: host, port: port, secretFile: secretFile, tokenCache: tokenCache)
        try await HeraldServerError.asValidation {
            let server = HeraldServer(configuration: configuration, logger: Logger(label: "herald.provider"))
            try await server.provider(listener: listener) { lines in
                format.printBanner(lines, label: "herald.provider")
            }
        }
    }
}
