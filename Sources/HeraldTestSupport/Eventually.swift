import HeraldMacros

/// Polls `attempt` until it returns a value, and returns it; throws `TimedOut` after `timeout`.
///
/// A poll with a deadline, in real time: only for state that has no change signal to wait on
/// (rows a store keeps, an external PostgreSQL server, a process that answers over HTTP, a file
/// another connection still holds). Where a signal exists (a stream, a continuation, a counter
/// with waiters such as `Recorded`, a service group finishing), wait on the signal instead: a
/// poll only says "not yet" until its deadline, and that deadline is a guess.
///
/// - Parameters:
///   - what: What is waited for, for the failure.
///   - timeout: How long to poll before giving up.
///   - interval: The pause between two attempts.
///   - attempt: Returns the value once the state is there, nil while it is not; an error it
///     throws ends the wait.
public func eventually<Value>(
    _ what: String,
    timeout: Duration = .seconds(10),
    every interval: Duration = .milliseconds(10),
    _ attempt: () async throws -> Value?
) async throws -> Value {
    let deadline = ContinuousClock.now + timeout
    while true {
        if let value = try await attempt() { return value }
        guard ContinuousClock.now < deadline else { throw TimedOut(what: what, after: timeout) }
        try await Task.sleep(for: interval)
    }
}

/// Polls `condition` until it holds; throws `TimedOut` after `timeout`. The same poll as
/// `eventually(_:timeout:every:_:)` returning a value, with the same limit: only where no
/// signal exists.
public func eventually(
    _ what: String,
    timeout: Duration = .seconds(10),
    every interval: Duration = .milliseconds(10),
    _ condition: () async throws -> Bool
) async throws {
    let _: Bool = try await eventually(what, timeout: timeout, every: interval) {
        try await condition() ? true : nil
    }
}

/// A wait that ended at its deadline.
@MemberwiseInit
public struct TimedOut: Error, CustomStringConvertible {
    /// What was waited for.
    public let what: String
    /// How long it was waited for.
    public let after: Duration

    public var description: String { "timed out after \(after) waiting for \(what)" }
}
