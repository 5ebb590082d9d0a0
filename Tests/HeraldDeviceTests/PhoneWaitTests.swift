import AsyncHTTPClient
import Foundation
import HeraldSimulation
import Logging
import Synchronization
import Testing

@testable import HeraldDevice

/// `EmulatedPhone.wait`: a change that lands while the condition is being looked at wakes the
/// waiter at once. It once slept until an unrelated change came, which in `herald simulate
/// telephony` was 10 s (the next live-channel timer) in about one run of five.
@Suite("Emulated phone: waiting for a change", .timeLimit(.minutes(1)))
struct PhoneWaitTests {
    @Test("a change during the check is not missed: the next look comes at once")
    func changeDuringTheCheck() async throws {
        let directory = NSTemporaryDirectory() + "herald-wait-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let phone = try EmulatedPhone(
            configuration: PhoneConfiguration(
                relayURL: "http://127.0.0.1:1",
                sandboxURL: "http://127.0.0.1:1",
                apiKey: "unused",
                userID: "u",
                bundleID: "com.example.chat",
                storeDirectory: directory
            ),
            http: http,
            timeline: Timeline(clock: TestClock(frozenAt: 0)),
            logger: Logger(label: "test.wait")
        )
        do {
            try await Self.check(phone)
        } catch {
            try await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    static func check(_ phone: EmulatedPhone) async throws {
        let looks = Mutex(0)
        let start = ContinuousClock.now
        // The first look sees the condition false while a change lands (as a push arriving
        // between the look and the wait); the second, if it comes before the bound, sees it true.
        // A waiter that missed the change would look again only at its 5 s timeout, too late.
        try await phone.wait("the change", timeout: .seconds(5)) { phone in
            let look = looks.withLock { looks in
                looks += 1
                return looks
            }
            if look == 1 { phone.changed() }
            return look > 1 && ContinuousClock.now - start < .seconds(3)
        }
        #expect(looks.withLock { $0 } == 2)
    }
}
