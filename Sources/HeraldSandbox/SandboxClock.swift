import Foundation
import HeraldPush
import Synchronization

/// The sandbox's time: the system's clocks plus an offset a test moves with `advance(by:)`, so
/// that the rules that depend on time (the provider-token update interval and maximum age,
/// `apns-expiration` of stored notifications, access-token lifetimes, uninstall timestamps) are
/// tested at their boundaries without waiting. A sandbox makes its own unless given one.
///
/// Token-retrieval delays of emulated devices are real waits on the same clock: an advance does
/// not hurry them.
public final class SandboxClock: Sendable {
    /// Nanoseconds added to the system's clocks.
    private let offset = Atomic<Int64>(0)

    public init() {}

    /// Moves the sandbox's time forward.
    public func advance(by duration: Duration) {
        offset.add(duration.nanoseconds, ordering: .relaxed)
    }

    /// The monotonic time intervals are measured on.
    public var now: ContinuousClock.Instant {
        ContinuousClock.now.advanced(by: .nanoseconds(offset.load(ordering: .relaxed)))
    }

    /// Wall-clock time as APNs and FCM report it: milliseconds since the epoch.
    public var epochMilliseconds: Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) + offset.load(ordering: .relaxed) / 1_000_000
    }

    /// Waits until `now` reads at least `deadline` (in real time, less the offset).
    func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await ContinuousClock().sleep(
            until: deadline.advanced(by: .nanoseconds(-offset.load(ordering: .relaxed)))
        )
    }
}
