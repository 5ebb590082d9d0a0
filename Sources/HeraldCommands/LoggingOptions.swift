import ArgumentParser
import HeraldServer
import Logging

/// `--log-level` and `--log-format`, alike in `herald serve`, `herald relay`, `herald provider`
/// and `herald sandbox`. Each command checks them where its own checks put them, so that of two
/// bad flags the same one is named as before.
struct LoggingOptions: ParsableArguments {
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @Option(
        name: .customLong("log-format"),
        help: "text, or json: one JSON object a line, for log shippers. (HERALD_LOG_FORMAT; default text)"
    )
    var logFormat: String?

    /// Refuses a level `Logger.Level` does not name.
    func checkLevel() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("unknown --log-level '\(logLevel)'")
        }
    }

    /// Refuses a format other than text or json (the flag's; the environment's is checked later).
    func checkFormat() throws {
        if let logFormat, LogFormat(rawValue: logFormat) == nil {
            throw ValidationError("--log-format must be text or json (got '\(logFormat)')")
        }
    }
}
