import Foundation

// One time model: settings and APIs hold `Duration`; stored times and wire times are whole
// milliseconds since the epoch (`Int64`). This is the one conversion between the two.

extension Duration {
    /// Whole milliseconds (rounded toward zero): a `Duration` as the store and the wire count time.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

/// The wall clock every part takes by default (tests inject their own).
public enum WallClock {
    /// Milliseconds since the Unix epoch.
    @Sendable public static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
