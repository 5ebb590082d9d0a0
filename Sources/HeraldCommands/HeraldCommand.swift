public import ArgumentParser

/// `herald`: the root command.
public struct HeraldCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Herald, an encrypted push gateway for messaging and calling apps.",
        discussion: """
            Herald seals what the push network must not read, per device, with keys agreed when \
            the device activated push. See README.md and docs/.
            """,
        version: HeraldVersion.current,
        subcommands: [
            ServeCommand.self, RelayCommand.self, ProviderCommand.self, SandboxCommand.self, DeviceCommand.self,
            ExtensionCommand.self, SimulateCommand.self, KeysCommand.self, StoreCommand.self, EnvelopeCommand.self,
            BenchCommand.self,
        ]
    )

    public init() {}
}

/// The version `herald --version` prints.
public enum HeraldVersion {
    public static let current = "0.1.0"
}
