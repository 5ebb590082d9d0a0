import ArgumentParser
import Foundation
import HeraldHTTPSupport
import HeraldSandbox
import HeraldServer
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// `herald sandbox`: the local APNs and FCM look-alike as its own service.
struct SandboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sandbox",
        abstract:
            "Run the APNs and FCM sandbox: HTTP/2 + TLS like Apple's and Google's servers, delivering to "
            + "emulated devices.",
        discussion: """
            The APNs listener speaks HTTP/2 over TLS with ALPN h2 and answers as Apple documents. \
            The FCM listener (HTTP/2 or HTTP/1.1 over TLS) answers messages:send as FCM HTTP v1 \
            does and exchanges service-account assertions for access tokens at /token. The control \
            API (HTTP/1.1 and WebSocket) registers apps, keys, service accounts and devices, \
            injects faults and shows what was received; see docs/sandbox.md. The development CA \
            and server certificate are made under --keys-dir on first start; clients trust \
            sandbox-ca.pem. Every AuthKey_*.json in --keys-dir (from `herald keys apns`) is \
            registered, with an app per --app and a service account per --service-account. \
            SIGTERM or SIGINT shuts down gracefully (GOAWAY Shutdown).
            """
    )

    @Option(help: "The address to listen on.")
    var host: String = "127.0.0.1"

    @Option(name: .customLong("apns-port"), help: "The APNs port (HTTP/2 + TLS); 0 picks one.")
    var apnsPort: Int = 2197

    @Option(
        name: .customLong("apns-production-port"),
        help:
            "APNs' production environment's port (production device tokens only): 2195 when --apns-port is 2197, else one picked; 0 picks one."
    )
    var apnsProductionPort: Int?

    @Option(name: .customLong("control-port"), help: "The control and device port (HTTP/1.1, WebSocket); 0 picks one.")
    var controlPort: Int = 2198

    @Option(name: .customLong("fcm-port"), help: "The FCM port (messages:send and /token, HTTP/2 + TLS); 0 picks one.")
    var fcmPort: Int = 2196

    @Option(
        name: .customLong("hms-port"),
        help: "The Huawei Push Kit port (messages:send and /oauth2/v3/token, HTTP/2 + TLS); 0 picks one."
    )
    var hmsPort: Int = 2193

    @Option(
        name: .customLong("webpush-port"),
        help:
            "The Web Push port (POST /wp/{id}, HTTP/2 + TLS): 2194 when --apns-port is 2197, else one picked; 0 picks one."
    )
    var webPushPort: Int?

    @Option(
        name: .customLong("keys-dir"),
        help: "Where the TLS files live (made when missing) and AuthKey_*.json are read."
    )
    var keysDirectory: String = "keys"

    @Option(
        name: .customLong("data"),
        help: ArgumentHelp(
            "Keep apps, devices and their tokens in DIR/sandbox-devices.json, so a restart keeps them.",
            discussion: "Without it they live in memory: a restarted sandbox answers BadDeviceToken (APNs) and "
                + "UNREGISTERED (FCM) for the tokens it issued before.",
            valueName: "dir"
        )
    )
    var dataDirectory: String?

    @Option(
        name: .customLong("config"),
        help: "A JSON file with {\"apps\": [...], \"keys\": [...], \"service_accounts\": [...]} to register at start."
    )
    var configurationFile: String?

    @Option(name: .customLong("app"), help: "Register an app, as BUNDLE_ID:TEAM_ID (repeatable).")
    var apps: [String] = []

    @Option(
        name: .customLong("service-account"),
        help: ArgumentHelp(
            "Register a service account from a JSON file (repeatable).",
            discussion: "A Google service-account key file (its public key is derived from private_key) or "
                + "{\"client_email\", \"private_key_id\", \"project_id\", \"public_key_pem\"}.",
            valueName: "path"
        )
    )
    var serviceAccountFiles: [String] = []

    @Option(name: .customLong("max-concurrent-streams"), help: "Streams per connection after a valid provider token.")
    var maxConcurrentStreams: Int = 1000

    @Option(
        name: .customLong("token-update-interval"),
        help: "Seconds a team must wait before using a new provider token (Apple: 1200)."
    )
    var tokenUpdateInterval: Int = 1200

    @Option(name: .customLong("token-max-age"), help: "Seconds after which a provider token is expired (Apple: 3600).")
    var tokenMaxAge: Int = 3600

    @Option(
        name: .customLong("idle-timeout"),
        help: "Seconds before an idle APNs connection gets GOAWAY IdleTimeout; 0 for never."
    )
    var idleTimeout: Int = 3600

    @Option(name: .customLong("inspection-capacity"), help: "Requests the inspection log keeps.")
    var inspectionCapacity: Int = 10_000

    @Option(
        name: .customLong("rate-limit"),
        help: "Pushes per second per device token before 429 TooManyRequests; 0 for none."
    )
    var rateLimit: Int = 0

    @Option(
        name: .customLong("http-header-read-timeout"),
        help: "Seconds a request head (control port) or the TLS handshake (FCM port) may take."
    )
    var httpHeaderReadTimeout: Int = 10

    @Option(
        name: .customLong("http-idle-timeout"),
        help: "Seconds a control or FCM connection may sit without a request before it is closed."
    )
    var httpIdleTimeout: Int = 60

    @Option(
        name: .customLong("http-max-connections"),
        help: "Connections the control and the FCM port each hold at once; one more is closed."
    )
    var httpMaxConnections: Int = 512

    @Option(help: "Event-loop threads; defaults to the number of cores.")
    var threads: Int = System.coreCount

    @OptionGroup var logging: LoggingOptions

    /// The flag, else HERALD_LOG_FORMAT, else text.
    var resolvedLogFormat: LogFormat? {
        let given =
            logging.logFormat
            ?? ProcessInfo.processInfo.environment["HERALD_LOG_FORMAT"].flatMap { $0.isEmpty ? nil : $0 }
        return given.map(LogFormat.init(rawValue:)) ?? .text
    }

    func validate() throws {
        guard resolvedLogFormat != nil else {
            throw ValidationError("--log-format (or HERALD_LOG_FORMAT) must be text or json")
        }
        for port in [apnsPort, controlPort, fcmPort, hmsPort] + [apnsProductionPort, webPushPort].compactMap({ $0 })
        where !(0...65_535).contains(port) {
            throw ValidationError("ports must be between 0 and 65535")
        }
        guard maxConcurrentStreams >= 1 else { throw ValidationError("--max-concurrent-streams must be at least 1") }
        guard tokenUpdateInterval >= 0, idleTimeout >= 0, rateLimit >= 0 else {
            throw ValidationError("intervals and limits must not be negative")
        }
        guard tokenMaxAge > 0 else { throw ValidationError("--token-max-age must be at least 1 second") }
        guard (1...64).contains(threads) else { throw ValidationError("--threads must be between 1 and 64") }
        guard inspectionCapacity >= 1 else { throw ValidationError("--inspection-capacity must be at least 1") }
        if let problem = httpLimits.problem { throw ValidationError(problem) }
        try logging.checkLevel()
        for app in apps where Self.parseApp(app) == nil {
            throw ValidationError("--app must be BUNDLE_ID:TEAM_ID (got '\(app)')")
        }
    }

    func run() async throws {
        let format = resolvedLogFormat ?? .text
        format.bootstrap()
        var logger = Logger(label: "herald.sandbox")
        logger.logLevel = Logger.Level(rawValue: logging.logLevel) ?? .info
        try await HeraldServer.sandbox(makeConfiguration(), threads: threads, logger: logger) { lines in
            format.printBanner(lines, label: "herald.sandbox")
        }
    }

    var httpLimits: HTTPConnectionLimits {
        HTTPConnectionLimits(
            headerReadTimeout: .seconds(httpHeaderReadTimeout),
            idleTimeout: .seconds(httpIdleTimeout),
            maxConnections: httpMaxConnections
        )
    }

    func makeConfiguration() throws -> SandboxConfiguration {
        let tls = try SandboxCertificateAuthority.ensure(directory: keysDirectory)
        var configuration = SandboxConfiguration(tls: tls)
        configuration.host = host
        configuration.apnsPort = apnsPort
        configuration.apnsProductionPort = SandboxConfiguration.productionPort(apnsProductionPort, apnsPort: apnsPort)
        configuration.controlPort = controlPort
        configuration.fcmPort = fcmPort
        configuration.hmsPort = hmsPort
        configuration.webPushPort = webPushPort
        configuration.maxConcurrentStreams = maxConcurrentStreams
        configuration.providerTokenUpdateInterval = .seconds(tokenUpdateInterval)
        configuration.providerTokenMaxAge = .seconds(tokenMaxAge)
        configuration.idleTimeout = idleTimeout == 0 ? nil : .seconds(idleTimeout)
        configuration.inspectionCapacity = inspectionCapacity
        configuration.http = httpLimits
        configuration.perTokenRateLimit = rateLimit == 0 ? nil : rateLimit
        configuration.registryFile = dataDirectory.map {
            ($0 as NSString).appendingPathComponent("sandbox-devices.json")
        }

        if let configurationFile {
            let file = try SandboxConfigurationFile.load(path: configurationFile)
            configuration.apps += file.apps ?? []
            configuration.keys += file.keys ?? []
            configuration.serviceAccounts += file.serviceAccounts ?? []
            configuration.hmsApps += file.hmsApps ?? []
        }
        for path in serviceAccountFiles {
            do {
                configuration.serviceAccounts.append(try SandboxServiceAccount.load(path: path))
            } catch {
                throw ValidationError("--service-account \(path): \(error)")
            }
        }
        let keyFiles = (try? FileManager.default.contentsOfDirectory(atPath: keysDirectory)) ?? []
        for name in keyFiles.sorted() where name.hasPrefix("AuthKey_") && name.hasSuffix(".json") {
            let data = try Data(contentsOf: URL(filePath: keysDirectory + "/" + name))
            do {
                configuration.keys.append(try JSONDecoder().decode(SandboxKey.self, from: data))
            } catch {
                throw ValidationError("\(keysDirectory)/\(name) is not a key description from `herald keys apns`")
            }
        }
        configuration.apps += apps.compactMap(Self.parseApp)
        return configuration
    }

    static func parseApp(_ text: String) -> SandboxApp? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        return SandboxApp(bundleID: String(parts[0]), teamID: String(parts[1]))
    }
}
