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

/// The one clock every part reads and waits on: production passes `WallClock`, tests pass a
/// clock they move themselves (`TestClock`), so that a timer fires when the test says, never by a
/// race with real time. Times are whole milliseconds since the Unix epoch, as stored.
public protocol HeraldClock: Sendable {
    /// Milliseconds since the Unix epoch.
    func now() -> Int64

    /// Returns once `now()` reads at least `deadline` (milliseconds since the epoch); throws
    /// `CancellationError` when the task is cancelled.
    func sleep(until deadline: Int64) async throws
}

extension HeraldClock {
    /// Whole seconds since the Unix epoch, as JWT `iat` and the push networks' expirations count.
    public func seconds() -> Int64 { now() / 1000 }

    /// Returns once `duration` has passed on this clock; throws `CancellationError` when the task
    /// is cancelled.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now() + duration.milliseconds)
    }

    /// Sleeps in real time until `now()` reads at least `deadline`: for a clock that moves with
    /// real time (plus whatever a test adds); throws `CancellationError` when the task is
    /// cancelled.
    public func sleepInRealTime(until deadline: Int64) async throws {
        // Task.sleep may return a little early against this clock: sleep again until it reads
        // the deadline.
        while case let remaining = deadline - now(), remaining > 0 {
            try await Task.sleep(for: .milliseconds(remaining))
        }
        try Task.checkCancellation()
    }
}

/// The wall clock: what production runs on.
public struct WallClock: HeraldClock {
    public init() {}

    /// Milliseconds since the Unix epoch.
    public func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// Sleeps in real time until `now()` reads at least `deadline`; throws `CancellationError`
    /// when the task is cancelled.
    public func sleep(until deadline: Int64) async throws { try await sleepInRealTime(until: deadline) }
}
