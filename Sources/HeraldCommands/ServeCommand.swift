import ArgumentParser
import Foundation
import HeraldServer
import Logging

/// `herald serve`: the relay and the provider in one process; the sandbox too when no Apple key
/// is configured.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract:
            "Run Herald: the relay and the provider stage in one process (with the sandbox when no Apple key is set).",
        discussion: """
            The relay's API is JSON under /v1 (docs/openapi.yaml), with /health and /metrics. \
            Backend calls take the API key (keys/api.key, made on first start, or HERALD_API_KEY); \
            device calls take the credential the device got at activation. Accepted pushes are \
            committed to SQLite (data/herald.sqlite) before the call returns, and sent by the \
            dispatcher through the provider stage: APNs for iOS devices, FCM for Android ones. With \
            no --apns-key, the sandbox (APNs and FCM) starts in-process with a development key, an \
            FCM service account (keys/fcm-service-account.json) and a CA under keys/, and every app is registered \
            with it. SIGTERM or SIGINT: stop accepting, finish the pushes in flight, exit.
            """
    )

    @OptionGroup var relay: RelayOptions

    @OptionGroup var apns: APNsOptions

    @OptionGroup var fcm: FCMOptions

    @Option(
        name: .customLong("sandbox-fcm-port"),
        help: "The in-process sandbox's FCM port (messages:send and /token); 0 picks one."
    )
    var sandboxFCMPort: Int = 2196

    @Option(
        name: .customLong("sandbox-webpush-port"),
        help:
            "The in-process sandbox's Web Push port (2194 beside the default APNs port, else one picked); 0 picks one."
    )
    var sandboxWebPushPort: Int?

    @Option(
        name: .customLong("sandbox-apns-port"),
        help: "The in-process sandbox's APNs port; 0 picks one."
    )
    var sandboxAPNsPort: Int = 2197

    @Option(
        name: .customLong("sandbox-apns-production-port"),
        help:
            "The in-process sandbox's port for APNs' production environment: 2195 beside the default APNs port, else one picked; 0 picks one."
    )
    var sandboxAPNsProductionPort: Int?

    @Option(
        name: .customLong("sandbox-control-port"),
        help: "The in-process sandbox's control port; 0 picks one."
    )
    var sandboxControlPort: Int = 2198

    func validate() throws {
        for port in [sandboxAPNsPort, sandboxAPNsProductionPort ?? 0, sandboxControlPort, sandboxFCMPort]
        where !(0...65_535).contains(port) {
            throw ValidationError("sandbox ports must be between 0 and 65535")
        }
    }

    /// What this command's own flags set.
    var layer: ConfigurationFile {
        var layer = ConfigurationFile()
        layer.apns = apns.layer
        layer.fcm = fcm.layer
        // Sandbox ports are flags with defaults; the file's win only over the defaults.
        var sandbox = ConfigurationFile.Sandbox()
        if sandboxAPNsPort != 2197 { sandbox.apnsPort = sandboxAPNsPort }
        if let sandboxAPNsProductionPort { sandbox.apnsProductionPort = sandboxAPNsProductionPort }
        if sandboxFCMPort != 2196 { sandbox.fcmPort = sandboxFCMPort }
        if sandboxControlPort != 2198 { sandbox.controlPort = sandboxControlPort }
        if let sandboxWebPushPort { sandbox.webPushPort = sandboxWebPushPort }
        if sandbox != ConfigurationFile.Sandbox() { layer.sandbox = sandbox }
        return layer
    }

    func run() async throws {
        let configuration = try relay.resolve(command: layer)
        let format = configuration.logFormat
        format.bootstrap()
        var server = HeraldServer(configuration: configuration, logger: Logger(label: "herald.serve"))
        server.reload = { [relay] in try relay.resolve(command: layer) }
        server.consoleSimulator = ConsoleFlows()
        try await HeraldServerError.asValidation {
            try await server.serve { lines in format.printBanner(lines, label: "herald.serve") }
        }
    }
}
