import Foundation
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldSimulation
import HeraldStore
import HeraldStoreSQLite
import HeraldTestSupport
import Logging
import Testing

/// A callback scheduled before a restart is pushed after it, once; a node that claimed a due
/// callback and died leaves it to the next claimer after its lease.
@Suite("Callbacks across restarts", .timeLimit(.minutes(1)))
struct CallbackRestartTests {
    static let logger = Logger(label: "test.callback-restart")

    /// A relay node over the database at `path`, on `clock`.
    static func node(_ path: String, _ masterKey: MasterKey, _ clock: TestClock) throws -> Relay {
        let store = try SQLiteStore(configuration: .init(path: path), logger: logger)
        return Relay(store: store, masterKey: masterKey, logger: logger, clock: clock)
    }

    /// The callback pushes queued for `callback`.
    static func pushes(_ relay: Relay, callback: String) async throws -> [PushItemView] {
        try await relay.ingest.pushes(PushListRequest(limit: 100)).pushes.filter { $0.kind == .callback }
    }

    @Test("scheduled, restarted before its time, due: pushed once by the new run, never again")
    func restartBetweenScheduleAndDue() async throws {
        let directory = NSTemporaryDirectory() + "herald-callback-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/herald.sqlite"
        let masterKey = MasterKey.generate()
        let clock = TestClock(frozenAt: 1_800_000_000_000)

        var first: Relay? = try Self.node(path, masterKey, clock)
        try await first!.activation.saveApp(StoreFixtures.app())
        _ = try await first!.activation.activate(
            ActivationRequest(
                userID: "alice",
                app: StoreFixtures.appID,
                platform: .ios,
                publicKey: KeyPair.generate().publicKey.base64,
                messagingToken: String(repeating: "ab", count: 32)
            )
        )
        let due = clock.now() + 120_000
        let scheduled = try await first!.callbacks.schedule(
            CallbackRequest(userID: "alice", serviceID: "svc-1", at: .milliseconds(due))
        )
        #expect(try await first!.callbacks.pushDue(owner: "node-1") == 0)
        first = nil

        // The next run, after the due time.
        clock.advance(by: .milliseconds(121_000))
        let second = try Self.node(path, masterKey, clock)
        #expect(try await second.callbacks.pushDue(owner: "node-1") == 1)
        #expect(try await second.callbacks.pushDue(owner: "node-1") == 0)
        #expect(try await second.callbacks.pushDue(owner: "node-2") == 0)
        let pushes = try await Self.pushes(second, callback: scheduled.callbackID)
        #expect(pushes.count == 1)
        let view = try await second.callbacks.callback(id: scheduled.callbackID)
        #expect(view.state == .pushed && view.pushes == 1)
        // The service id and the dialog are sealed at rest, in the callback and in its push.
        for needle in ["svc-1", "Agent is available", "ready to talk", "try again in 5 minutes"] {
            #expect(!SealedAtRestTests.filesContain(path, needle), "\(needle) is in the database's files")
        }
    }

    @Test("a node claims and dies: nobody pushes while its lease holds; then another node, once")
    func deadClaimer() async throws {
        let directory = NSTemporaryDirectory() + "herald-callback-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/herald.sqlite"
        let masterKey = MasterKey.generate()
        let clock = TestClock(frozenAt: 1_800_000_000_000)
        let relay = try Self.node(path, masterKey, clock)
        try await relay.activation.saveApp(StoreFixtures.app())
        _ = try await relay.activation.activate(
            ActivationRequest(
                userID: "bob",
                app: StoreFixtures.appID,
                platform: .ios,
                publicKey: KeyPair.generate().publicKey.base64,
                messagingToken: String(repeating: "cd", count: 32)
            )
        )
        let scheduled = try await relay.callbacks.schedule(CallbackRequest(userID: "bob", serviceID: "svc-2"))
        // The node that dies: its claim, and nothing after it.
        let store = try SQLiteStore(configuration: .init(path: path), logger: Self.logger)
        let claimed = try await store.claimDueCallbacks(
            limit: 10,
            owner: "dead",
            now: clock.now(),
            leaseUntil: clock.now() + 30_000
        )
        #expect(claimed.map(\.id) == [scheduled.callbackID])

        #expect(try await relay.callbacks.pushDue(owner: "alive") == 0)
        clock.advance(by: .milliseconds(31_000))
        #expect(try await relay.callbacks.pushDue(owner: "alive") == 1)
        #expect(try await relay.callbacks.pushDue(owner: "alive") == 0)
        #expect(try await Self.pushes(relay, callback: scheduled.callbackID).count == 1)
        #expect(
            try await relay.callbacks.callback(id: scheduled.callbackID).history.map(\.event) == [
                "scheduled", "pushed",
            ]
        )
    }
}
