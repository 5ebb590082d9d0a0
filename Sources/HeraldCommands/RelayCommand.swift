import ArgumentParser
import Foundation
import HeraldServer
import Logging

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
        help:
            "A provider's base URL, such as http://127.0.0.1:2199; repeat it for several providers, which share the batches. (HERALD_PROVIDER_URL, comma-separated)"
    )
    var providerURLs: [String] = []

    @Option(
        name: .customLong("provider-secret-file"),
        help:
            "The file with the provider's bearer secret. (HERALD_PROVIDER_SECRET holds the secret itself; default keys/provider.secret)"
    )
    var providerSecretFile: String?

    func run() async throws {
        var layer = ConfigurationFile()
        layer.provider = .flags(urls: providerURLs, secretFile: providerSecretFile)
        let configuration = try relay.resolve(command: layer)
        let format = configuration.logFormat
        format.bootstrap()
        var server = HeraldServer(configuration: configuration, logger: Logger(label: "herald.relay"))
        server.reload = { [relay, layer] in try relay.resolve(command: layer) }
        server.consoleSimulator = ConsoleFlows()
        try await HeraldServerError.asValidation {
            try await server.relay { lines in format.printBanner(lines, label: "herald.relay") }
        }
    }
}

extension ConfigurationFile.Provider {
    /// The remote providers `--provider-url` (repeatable) and `--provider-secret-file` name; nil
    /// when neither is given, so the environment and the file decide.
    static func flags(urls: [String], secretFile: String?) -> Self? {
        guard !urls.isEmpty || secretFile != nil else { return nil }
        var provider = Self()
        if urls.count > 1 {
            provider.urls = urls
        } else {
            provider.url = urls.first
        }
        provider.secretFile = secretFile
        return provider
    }
}
