import Synchronization

/// A clock that moves only when a test moves it: milliseconds since the epoch, as the relay,
/// the store and the dispatcher count time.
public final class ManualClock: Sendable {
    private let time: Atomic<Int64>

    /// A clock showing `start`.
    public init(at start: Int64) {
        time = Atomic(start)
    }

    /// The time now; pass `clock.now` wherever a `() -> Int64` clock is taken.
    public func now() -> Int64 { time.load(ordering: .sequentiallyConsistent) }

    /// Sets the time (it may go back: a test decides).
    public func set(_ value: Int64) { time.store(value, ordering: .sequentiallyConsistent) }

    /// Moves the time on by `milliseconds` and returns the new time.
    @discardableResult
    public func advance(by milliseconds: Int64) -> Int64 {
        time.add(milliseconds, ordering: .sequentiallyConsistent).newValue
    }
}
