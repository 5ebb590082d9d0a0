import Dispatch
import Foundation
import GRDB
import HeraldStore
import HeraldTestSupport
import Logging
import Synchronization
import Testing

@testable import HeraldStoreSQLite

/// The read every ingest makes runs on the calling thread (`readNow`); it must never wait for
/// the pool's readers, which async reads can hold while they wait for a thread.
@Suite("SQLite ingest read", .timeLimit(.minutes(2)))
struct SQLiteHotReadTests {
    @Test("the ingest's read answers while every pool reader is held")
    func readNowBesideHeldReaders() async throws {
        let directory = NSTemporaryDirectory() + "herald-hot-read-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = SQLiteStore.Configuration(path: directory + "/herald.sqlite")
        configuration.readers = 1
        let store = try SQLiteStore(configuration: configuration, logger: Logger(label: "test.store"))
        try await store.saveApp(StoreFixtures.app())
        try await store.saveDevice(StoreFixtures.device("d1"))

        // The pool's only reader, held until `release` is signalled.
        let release = DispatchSemaphore(value: 0)
        let holder = Task {
            try await withCheckedThrowingContinuation { (held: CheckedContinuation<Void, any Error>) in
                Task {
                    do {
                        try await store.pool.read { _ in
                            held.resume()
                            release.wait()
                        }
                    } catch {
                        held.resume(throwing: error)
                    }
                }
            }
        }
        try await holder.value

        // Had the read waited for that reader, this would have blocked for good; the watchdog
        // (on a dispatch thread, not the cooperative pool) lets it go after 10 s and says so.
        let race = Race()
        DispatchQueue.global().asyncAfter(deadline: .now() + 10) {
            if race.first(.watchdog) { release.signal() }
        }
        let recipients = try await store.recipients(userID: StoreFixtures.device("d1").userID)
        let readFirst = race.first(.read)
        if readFirst { release.signal() }

        #expect(readFirst, "the ingest's read waited for the pool's reader")
        #expect(recipients.map(\.device.id) == ["d1"])
    }
}

/// Which of the read and the watchdog finished first.
private final class Race: Sendable {
    enum Side: Sendable { case read, watchdog }
    private let winner = Mutex<Side?>(nil)

    /// Whether `side` is the first to get here.
    func first(_ side: Side) -> Bool {
        winner.withLock { winner in
            if winner != nil { return false }
            winner = side
            return true
        }
    }
}
