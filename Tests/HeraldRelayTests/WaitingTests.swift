import HeraldTestSupport
import Synchronization
import Testing

/// The test support's waits: `eventually` (a poll, for state with no signal) and
/// `Recorded.wait(forCount:within:)` (a signal, with a deadline guard).
@Suite("Test support: waiting")
struct WaitingTests {
    struct Failure: Error {}

    @Test("eventually returns the first value its attempt gives, and asks no more")
    func eventuallyReturnsTheFirstValue() async throws {
        let attempts = Mutex(0)
        let value = try await eventually("the third attempt", every: .milliseconds(1)) { () -> Int? in
            let attempt = attempts.withLock { count in
                count += 1
                return count
            }
            return attempt >= 3 ? attempt * 10 : nil
        }
        #expect(value == 30)
        #expect(attempts.withLock { $0 } == 3)
    }

    @Test("eventually throws TimedOut, naming what it waited for, when the state never comes")
    func eventuallyTimesOut() async throws {
        let error = await #expect(throws: TimedOut.self) {
            try await eventually("nothing", timeout: .milliseconds(20), every: .milliseconds(5)) { false }
        }
        #expect(error?.what == "nothing")
        #expect(error?.description.hasSuffix("waiting for nothing") == true)
    }

    @Test("an error the attempt throws ends eventually at once")
    func eventuallyStopsOnAnError() async throws {
        let attempts = Mutex(0)
        await #expect(throws: Failure.self) {
            try await eventually("a failing attempt", timeout: .seconds(10)) { () -> Bool in
                attempts.withLock { $0 += 1 }
                throw Failure()
            }
        }
        #expect(attempts.withLock { $0 } == 1)
    }

    @Test("Recorded.wait(forCount:within:) returns once the count is recorded, from another task")
    func recordedWaitReturnsOnTheSignal() async throws {
        let recorded = Recorded<Int>()
        async let waited = recorded.wait(forCount: 2, within: .seconds(10), "two")
        recorded.append(contentsOf: [1])
        recorded.append(contentsOf: [2])
        #expect(try await waited == [1, 2])
    }

    @Test("Recorded.wait(forCount:within:) throws TimedOut when fewer came before the deadline")
    func recordedWaitTimesOut() async throws {
        let recorded = Recorded<Int>()
        recorded.append(contentsOf: [1])
        let error = await #expect(throws: TimedOut.self) {
            try await recorded.wait(forCount: 2, within: .milliseconds(20), "a second")
        }
        #expect(error?.what == "a second")
    }
}
