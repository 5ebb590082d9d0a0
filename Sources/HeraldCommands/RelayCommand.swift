import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldRelayProvider
import HeraldStore
import Logging
import NIOPosix
import ServiceLifecycle

/// `herald relay`: the relay alone, sending through a remote `herald provider`.
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Run the relay alone, sending pushes through a remote `herald provider`.",
        discussion: """
            The same API, store and dispatcher as `herald serve`; the dispatcher posts batches to \
            the provider's /v1/push/batch with its bearer secret (HERALD_PROVIDER_SECRET or \
            --provider-secret-file). When the provider cannot be reached, pushes stay in the \
            outbox and are retried until they expire.
            """
    )

    @OptionGroup var relay: RelayOptions

    @Option(
        name: .customLong("provider-url"),
        help: "The provider's base URL, such as http://127.0.0.1:2199. (HERALD_PROVIDER_URL)"
    )
    var providerURL: String?

    @Option(
        name: .customLong("provider-secret-file"),
        help:
            "The file with the provider's bearer secret. (HERALD_PROVIDER_SECRET holds the secret itself; default keys/provider.secret)"
    )
    var providerSecretFile: String?

    func run() async throws {
        let options = try relay.resolve()
        var logger = Logger(label: "herald.relay")
        logger.logLevel = options.logLevel
        guard
            let url = providerURL ?? ServeEnvironment.string("HERALD_PROVIDER_URL") ?? options.file.provider?.url
        else { throw ValidationError("--provider-url is needed (or HERALD_PROVIDER_URL, or provider.url in --config)") }
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
            throw ValidationError("--provider-url must be an http:// or https:// URL")
        }
        let secret: String
        if let value = ServeEnvironment.string("HERALD_PROVIDER_SECRET") {
            secret = value
        } else {
            let path =
                providerSecretFile ?? options.file.provider?.secretFile
                ?? (options.keysDir as NSString).appendingPathComponent("provider.secret")
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError(
                    "cannot read the provider secret \(path) (start `herald provider` first, or set HERALD_PROVIDER_SECRET)"
                )
            }
            secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let registry = ServeMetrics.bootstrap()
        let (masterKey, masterSource) = try options.masterKey()
        let (apiKey, apiKeySource) = try options.apiKey()
        let store = try options.openStore(logger: logger)
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let platforms = await Self.platforms(provider: url, http: http, logger: logger)
        let runtime = RelayRuntime(
            options: options,
            store: store,
            masterKey: masterKey,
            apiKey: apiKey,
            sender: RemotePushSender(url: url, secret: secret, client: http, logger: logger),
            platforms: platforms,
            registry: registry,
            logger: logger
        )
        do {
            _ = try await options.registerApps(with: runtime.relay, defaultTeam: nil)
            let apps = try await store.apps()
            try await runtime.run(extraServices: []) { port in
                print("herald relay")
                runtime.printCommon(port: port, apps: apps, apiKeySource: apiKeySource, masterSource: masterSource)
                print(
                    "  provider     \(url) (pushes to \(platforms.map(\.rawValue).sorted().joined(separator: " and ")))"
                )
            }
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    /// The platforms the provider has credentials for, from its `/health`; both when it cannot be
    /// asked now (it may start later), so no device is skipped for want of an answer.
    static func platforms(provider url: String, http: HTTPClient, logger: Logger) async -> Set<DevicePlatform> {
        let all = Set(DevicePlatform.allCases)
        do {
            let response = try await http.execute(HTTPClientRequest(url: url + "/health"), timeout: .seconds(5))
            let body = try await response.body.collect(upTo: 64 * 1024)
            guard response.status == .ok,
                let health = try? JSONDecoder().decode([String: String].self, from: Data(body.readableBytesView))
            else { return all }
            var platforms = Set<DevicePlatform>()
            if health["apns"] != "off" { platforms.insert(.ios) }
            if health["fcm"] != "off" { platforms.insert(.android) }
            return platforms
        } catch {
            logger.warning(
                "cannot ask the provider which networks it has; assuming APNs and FCM",
                metadata: ["error": "\(error)"]
            )
            return all
        }
    }
}
