import ArgumentParser
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldCrypto
import HeraldFCM
import HeraldProvider
import HeraldProviderHTTP
import HeraldServer
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// Options shared by everything that talks to APNs: credentials and connection.
struct APNsOptions: ParsableArguments {
    @Option(help: "The AuthKey_<KEYID>.p8 file (ES256 provider key).")
    var key: String?

    @Option(name: .customLong("key-id"), help: "The key id; read from the file name when omitted.")
    var keyID: String?

    @Option(name: .customLong("team-id"), help: "The team id the key belongs to.")
    var teamID: String?

    @Option(help: "development (api.sandbox.push.apple.com) or production (api.push.apple.com).")
    var environment: String = "development"

    @Option(
        name: .customLong("apns-url"),
        help: "Another APNs endpoint, such as the local sandbox (https://127.0.0.1:2197)."
    )
    var apnsURL: String?

    @Option(name: .customLong("ca"), help: "A CA certificate (PEM) to trust, such as keys/sandbox-ca.pem.")
    var caFile: String?

    @Option(help: "HTTP/2 connections to APNs.")
    var connections: Int = 2

    @Option(name: .customLong("request-timeout"), help: "Seconds one attempt may take.")
    var requestTimeout: Int = 10

    func validate() throws {
        guard ["development", "production"].contains(environment) else {
            throw ValidationError("--environment must be development or production")
        }
        guard (1...64).contains(connections) else { throw ValidationError("--connections must be between 1 and 64") }
        guard requestTimeout > 0 else { throw ValidationError("--request-timeout must be at least 1") }
    }

    func makeClient(
        logger: Logger,
        group: any EventLoopGroup,
        tokenCache: String? = nil,
        feedback: @escaping @Sendable (APNsTokenFeedback) async -> Void = { _ in }
    )
        throws -> (APNsClient, ProviderTokenManager)
    {
        guard let key, let teamID else { throw ValidationError("--key and --team-id are needed for APNs") }
        let url =
            apnsURL
            ?? (environment == "production" ? APNsClientConfiguration.production : APNsClientConfiguration.development)
        let settings = APNsSettings(
            key: key,
            keyID: keyID,
            teamID: teamID,
            url: url,
            caFile: caFile,
            connections: connections,
            requestTimeout: requestTimeout,
            tokenCache: tokenCache
        )
        return try settings.makeClient(logger: logger, group: group, feedback: feedback)
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
            "Where the provider token is kept (0600) so a restart reuses it; APNs refuses a new one within 20 minutes."
    )
    var tokenCache: String = "data/provider-token"

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        guard apns.key != nil || fcm.serviceAccount != nil else {
            throw ValidationError("give --key and --team-id (APNs), --fcm-service-account (FCM), or both")
        }
        if apns.key != nil, apns.teamID == nil { throw ValidationError("--team-id is needed with --key") }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("unknown --log-level '\(logLevel)'")
        }
    }

    func run() async throws {
        var logger = Logger(label: "herald.provider")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        // The key first: a wrong key path should not leave a new secret file behind.
        let client =
            apns.key == nil
            ? nil
            : try apns.makeClient(logger: logger, group: MultiThreadedEventLoopGroup.singleton, tokenCache: tokenCache)
                .0
        let fcmClient = try fcm.settings?.makeClient(logger: logger, group: MultiThreadedEventLoopGroup.singleton)
        let secret = try loadOrMakeSecret()
        let ready = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: ProviderHTTPService.router(stage: ProviderStage(apns: client, fcm: fcmClient), secret: secret),
            configuration: .init(address: .hostname(host, port: port), serverName: "herald-provider"),
            onServerRunning: { channel in ready.continuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        let services = ServiceGroup(
            configuration: .init(
                services: ([client, fcmClient] as [(any Service)?]).compactMap { $0 }.map { .init(service: $0) }
                    + [.init(service: app)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await services.run() }
            var ports = ready.stream.makeAsyncIterator()
            if let bound = await ports.next() {
                print("herald provider")
                print("  listening    http://\(host):\(bound)/v1/push/batch   (bearer secret in \(secretSource))")
                if client != nil {
                    print("  APNs         \(apns.apnsURL ?? apns.environment), \(apns.connections) connection(s)")
                } else {
                    print("  APNs         off (no --key)")
                }
                if let fcmClient {
                    print(
                        "  FCM          \(fcm.url ?? FCMClientConfiguration.googleURL) (project \(fcmClient.projectID))"
                    )
                } else {
                    print("  FCM          off (no --fcm-service-account)")
                }
                fflush(nil)
            }
            try await tasks.next()
        }
    }

    private var secretSource: String {
        ProcessInfo.processInfo.environment["HERALD_PROVIDER_SECRET"] != nil ? "HERALD_PROVIDER_SECRET" : secretFile
    }

    func loadOrMakeSecret() throws -> String {
        if let value = ProcessInfo.processInfo.environment["HERALD_PROVIDER_SECRET"], !value.isEmpty { return value }
        if let text = try? String(contentsOfFile: secretFile, encoding: .utf8) {
            let secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard secret.count >= 16 else {
                throw ValidationError("\(secretFile) holds a secret shorter than 16 characters")
            }
            return secret
        }
        try KeyFiles.makeParentDirectory(of: secretFile)
        let secret = ByteEncoding.hex(SecureBytes.random(count: 32).copyBytes())
        try SecretFile.write(Array((secret + "\n").utf8), to: secretFile, mode: 0o600)
        return secret
    }
}
