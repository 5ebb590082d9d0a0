import Foundation
import HeraldObservability
import HeraldRelayAPI
public import Logging
import Synchronization

/// How a long-running command writes its logs: swift-log's text lines (the default), or one JSON
/// object a line for log shippers (`--log-format json`, `log_format` in the configuration file,
/// `HERALD_LOG_FORMAT`).
public enum LogFormat: String, Sendable, Hashable, CaseIterable {
    /// `2026-11-25T02:30:00+0000 info herald.serve : push=… [HeraldRelay] push finished`.
    case text
    /// `{"timestamp":"2026-11-25T02:30:00.123Z","level":"info","label":"herald.serve",
    /// "message":"push finished","metadata":{"push":"…"},"source":"HeraldRelay"}`.
    case json

    private static let bootstrapped = Mutex<LogFormat?>(nil)

    /// Makes every logger of the process write in this format, to standard error. The first call
    /// wins (swift-log takes one bootstrap a process); call it before making loggers, which keep
    /// the handler they were made with.
    public func bootstrap() {
        let first = Self.bootstrapped.withLock { current -> Bool in
            guard current == nil else { return false }
            current = self
            return true
        }
        guard first else { return }
        // Every handler logs at the process's level (`LogLevelSwitch`), which SIGHUP changes.
        switch self {
        // Every record logged while an HTTP request is handled carries its `request_id`.
        case .text:
            LoggingSystem.bootstrap(
                { label, provider in
                    SwitchedLevelHandler(
                        inner: StreamLogHandler.standardError(label: label, metadataProvider: provider)
                    )
                },
                metadataProvider: AccessLog.metadataProvider
            )
        case .json:
            LoggingSystem.bootstrap(
                { label, provider in
                    SwitchedLevelHandler(
                        inner: JSONLogHandler(
                            label: label,
                            metadataProvider: provider,
                            write: JSONLogHandler.standardError
                        )
                    )
                },
                metadataProvider: AccessLog.metadataProvider
            )
        }
    }

    /// Writes a command's start-up banner to standard output: the lines as they are in text, one
    /// JSON record holding them (message `ready`, metadata `banner`) in JSON, so a log shipper
    /// reading both streams sees nothing but JSON.
    public func printBanner(_ lines: [String], label: String) {
        switch self {
        case .text:
            for line in lines { print(line) }
        case .json:
            let record = JSONLogHandler.record(
                date: Date(),
                level: .notice,
                label: label,
                message: "ready",
                metadata: ["banner": .array(lines.map { .string($0) })],
                source: nil,
                error: nil
            )
            print(record, terminator: "")
        }
        fflush(nil)
    }
}

/// A swift-log handler that writes each record as one line of JSON: `timestamp` (ISO 8601 in UTC,
/// milliseconds), `level`, `label`, `message`, `metadata` (an object; nested values stay nested),
/// `source` (the module that logged), and `error` when the record carries one.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public var logLevel: Logger.Level = .info
    private let label: String
    private let write: @Sendable (String) -> Void

    /// - Parameters:
    ///   - metadataProvider: adds metadata to every record (the process's, by default).
    ///   - write: gets each record, one line ending in a newline.
    public init(
        label: String,
        metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider,
        write: @escaping @Sendable (String) -> Void
    ) {
        self.label = label
        self.write = write
        self.metadataProvider = metadataProvider
    }

    /// Writes a line to standard error in one call, so concurrent records never interleave.
    public static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data(line.utf8))
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let own = event.metadata { all.merge(own) { _, new in new } }
        write(
            Self.record(
                date: Date(),
                level: event.level,
                label: label,
                message: event.message.description,
                metadata: all,
                source: event.source,
                error: event.error.map { "\($0)" }
            )
        )
    }

    /// One record as a line of JSON, its keys in a fixed order.
    static func record(
        date: Date,
        level: Logger.Level,
        label: String,
        message: String,
        metadata: Logger.Metadata,
        source: String?,
        error: String?
    ) -> String {
        var line = "{\"timestamp\":"
        line += quoted(date.formatted(timestampStyle))
        line += ",\"level\":" + quoted(level.rawValue)
        line += ",\"label\":" + quoted(label)
        line += ",\"message\":" + quoted(message)
        line += ",\"metadata\":" + json(.dictionary(metadata))
        if let source { line += ",\"source\":" + quoted(source) }
        if let error { line += ",\"error\":" + quoted(error) }
        return line + "}\n"
    }

    private static let timestampStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)

    /// A metadata value as JSON, keeping its type: `.string` is always a string (an id such as
    /// "0012" stays one); `.stringConvertible` is a number when it holds an integer or a finite
    /// floating-point value, `true`/`false` when it holds a `Bool`, and its description as a
    /// string otherwise (an infinity or NaN, which JSON has no number for, included);
    /// `.array` and `.dictionary` nest, a dictionary's keys sorted so records compare line by line.
    static func json(_ value: Logger.MetadataValue) -> String {
        switch value {
        case .string(let text): quoted(text)
        case .stringConvertible(let convertible): scalar(convertible)
        case .array(let values): "[" + values.map(json).joined(separator: ",") + "]"
        case .dictionary(let values):
            "{" + values.keys.sorted().map { quoted($0) + ":" + json(values[$0]!) }.joined(separator: ",") + "}"
        }
    }

    private static func scalar(_ convertible: any CustomStringConvertible & Sendable) -> String {
        switch convertible {
        case let flag as Bool: flag ? "true" : "false"
        // An integer's description is its decimal digits, a JSON number as it is.
        case let integer as any BinaryInteger: integer.description
        case let number as any BinaryFloatingPoint where number.isFinite: convertible.description
        default: quoted(convertible.description)
        }
    }

    /// A JSON string, escaped as the relay escapes its own (`JSONText`): quotes, backslashes,
    /// control characters and the two line separators JavaScript reads as line ends.
    static func quoted(_ text: String) -> String { JSONText.quoted(text) }
}
