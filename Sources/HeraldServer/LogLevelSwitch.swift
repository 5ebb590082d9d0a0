public import Logging
import Synchronization

/// The process's log level, which SIGHUP changes: the handlers `LogFormat.bootstrap` makes read
/// it instead of a level of their own, so every logger made before a reload follows it.
public enum LogLevelSwitch {
    private static let current = Atomic<UInt8>(index(.info))

    /// The level every bootstrapped handler logs at.
    public static var level: Logger.Level {
        get { Logger.Level.allCases[Int(current.load(ordering: .relaxed))] }
        set { current.store(index(newValue), ordering: .relaxed) }
    }

    private static func index(_ level: Logger.Level) -> UInt8 {
        UInt8(Logger.Level.allCases.firstIndex(of: level)!)
    }
}

/// A handler whose level is the process's (`LogLevelSwitch`): setting a logger's level sets it.
struct SwitchedLevelHandler<Inner: LogHandler>: LogHandler {
    var inner: Inner

    var logLevel: Logger.Level {
        get { LogLevelSwitch.level }
        set { LogLevelSwitch.level = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        inner.log(event: event)
    }
}
