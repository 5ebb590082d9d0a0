public import ArgumentParser
import Foundation
import HeraldObservability
import HeraldServer

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
            ServeCommand.self, RelayCommand.self, ProviderCommand.self, SandboxCommand.self, CheckCommand.self,
            DeviceCommand.self,
            ExtensionCommand.self, SimulateCommand.self, KeysCommand.self, OperatorsCommand.self, StoreCommand.self,
            EnvelopeCommand.self, BenchCommand.self,
        ]
    )

    public init() {}
}

/// The version `herald --version` prints.
public enum HeraldVersion {
    /// The one version string: `herald --version` and `herald_build_info` in `/metrics`.
    public static let current = BuildInfo.version
}

extension HeraldCommand {
    /// Parses the arguments and runs the subcommand they name, as `main()` does, except that an
    /// error the subcommand raises while running prints its message alone.
    ///
    /// ArgumentParser's `main()` follows a `ValidationError` thrown from `run()` with the root
    /// command's usage ("Usage: herald <subcommand>"), which says nothing about what went wrong:
    /// a start-up refusal (`serve --config /nonexistent.json`) is one line and exit 64.
    public static func runMain(_ arguments: [String]? = nil) async {
        var command: any ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            // Parse and validation errors: the message with the usage of the command they concern.
            exit(withError: error)
        }
        do {
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch let error as ValidationError {
            quiet()
            FileHandle.standardError.write(Data(("Error: " + error.message + "\n").utf8))
            Foundation.exit(ExitCode.validationFailure.rawValue)
        } catch {
            quiet()
            exit(withError: error)
        }
    }

    /// Silences the logs of a command that failed: what it started is still closing (listeners,
    /// pooled connections, on their own threads) and may log as it goes; the line that says why
    /// the command failed must be the last one.
    private static func quiet() {
        LogLevelSwitch.level = .critical
    }
}
