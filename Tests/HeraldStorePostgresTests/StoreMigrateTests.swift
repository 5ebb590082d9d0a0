import Foundation
import GRDB
import HeraldPush
import HeraldStore
import HeraldStoreSQLite
import HeraldTestSupport
import Logging
import Synchronization
import Testing

@testable import HeraldStorePostgres

/// `herald store migrate`'s store seam: a SQLite store filled through the store API, exported
/// (`SQLiteExport`) into PostgreSQL (`PostgresStore.importAll`), and read back through the store
/// API, with the dispatcher's path (claims, repeated ingests) working on what arrived.
@Suite("Store migration SQLite → PostgreSQL", .timeLimit(.minutes(2)))
struct StoreMigrateTests {
    static let t: Int64 = 1_700_000_000_000

    /// A directory of the test's own for the SQLite file.
    final class Directory {
        let path = NSTemporaryDirectory() + "herald-migrate-\(UUID().uuidString)"
        var database: String { path + "/herald.sqlite" }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    static func openSQLite(_ path: String) throws -> SQLiteStore {
        var configuration = SQLiteStore.Configuration(path: path)
        configuration.durable = false
        return try SQLiteStore(configuration: configuration, logger: Logger(label: "test.sqlite"))
    }

    /// What the filled SQLite store held, read through its API before the store was closed.
    struct Source {
        var apps: [AppRecord]
        var devices: [DeviceRecord]
        var recipients: [Recipient]
        var message: MessageRecord?
        /// The pushes not finished, as the source had them (some claimed).
        var pending: [OutboxEntry]
        var retriedLog: [DeliveryEvent]
        var transcript: [TranscriptEvent]
        var chats: [ChatRecord]
        var disconnects: [ChatDisconnect]
    }

    /// Apps, three devices (one Android), presence, a message ingest with a key, a call, pushes
    /// claimed by a node that stopped (in flight), one delivered, one back in the queue with a
    /// reason, an open chat with a disconnect and an ended chat; an API key, an audit entry and a
    /// held message.
    static func fill(_ store: SQLiteStore) async throws -> Source {
        try await store.saveApp(StoreFixtures.app())
        var other = AppRecord(
            id: "com.example.other",
            teamID: "TEAM654321",
            contentPolicy: .none,
            collapseByConversation: true
        )
        other.queueOrder = .customerWait
        try await store.saveApp(other)
        var d1 = StoreFixtures.device("d1", user: "u1", createdAt: t)
        d1.sealedRelaySecretKey = Array(repeating: 7, count: 48)
        d1.sealedSessionKeys = Array(repeating: 8, count: 80)
        d1.credentialHash = Array(repeating: 9, count: 32)
        d1.previousKeyID = "8899aabbccddeeff"
        // Moved like the rest: when the device last reported its notification permission (its
        // pushes are claimed below, so it stays granted; the conformance rule moves a denied one).
        d1.notificationPermissionAt = t + 5
        try await store.saveDevice(d1)
        try await store.saveDevice(StoreFixtures.androidDevice("d2", user: "u2", token: "fcm-token-2"))
        var d3 = StoreFixtures.device("d3", user: "u1", voip: "", createdAt: t + 1)
        d3.voipToken = nil
        try await store.saveDevice(d3)
        try await store.savePresence(
            PresenceRecord(
                deviceID: "d1",
                userID: "u1",
                conversation: "chat1",
                state: .background,
                updatedAt: t,
                expiresAt: t + 60_000
            )
        )

        var message = StoreFixtures.message("m1", user: "u1", at: t, expires: t + 86_400_000)
        message.sealedPushOptions = Array(repeating: 6, count: 70)
        // A customer's wait and a now-or-never flag: both arrive with the push.
        var p1 = StoreFixtures.push("p1", device: "d1", at: t, expires: t + 3_600_000)
        p1.waitingSince = t - 90_000
        p1.nowOrNever = true
        #expect(
            try await store.accept(
                StoreFixtures.ingest(
                    [
                        p1,
                        StoreFixtures.fcmPush("p2", device: "d2", at: t, expires: t + 3_600_000),
                    ],
                    key: "key-1",
                    message: message,
                    receipt: Array("receipt-1".utf8)
                )
            ) == .accepted
        )
        _ = try await store.accept(
            StoreFixtures.ingest(
                [StoreFixtures.push("c1", device: "d1", kind: .call, at: t + 3, expires: t + 30_000)],
                key: "key-call",
                receipt: Array("receipt-call".utf8)
            )
        )
        _ = try await store.accept(
            StoreFixtures.ingest([StoreFixtures.push("p3", device: "d3", at: t + 1, expires: t + 3_600_000)])
        )
        _ = try await store.accept(
            StoreFixtures.ingest([StoreFixtures.push("p4", device: "d3", at: t + 2, expires: t + 3_600_000)])
        )

        // A node claims everything, delivers p4, sends p3 back with a reason, and stops with the
        // others in flight.
        let claimed = try await store.claim(limit: 10, owner: "old-node", now: t + 10, leaseUntil: t + 60_010)
        #expect(claimed.first?.entry.pushID == "c1")
        #expect(Set(claimed.map(\.entry.pushID)) == ["c1", "p1", "p2", "p3", "p4"])
        try await store.complete(
            [
                PushCompletion(pushID: "p4", disposition: .finish(.delivered), reason: nil, deadToken: nil),
                PushCompletion(
                    pushID: "p3",
                    disposition: .retry(at: t + 5_000),
                    reason: "InternalServerError",
                    deadToken: nil
                ),
            ],
            now: t + 20
        )

        #expect(try await store.appendTranscript(event("chat1", "u1", agent: true, at: t)) == 1)
        #expect(try await store.appendTranscript(event("chat1", "u1", agent: false, at: t + 1)) == 2)
        #expect(try await store.appendTranscript(event("chat2", "u2", agent: true, at: t)) == 1)
        _ = try await store.endChat(conversation: "chat2", at: t + 50)
        try await store.saveDisconnect(ChatDisconnect(deviceID: "d1", conversation: "chat1", position: 2, at: t + 2))

        // A backend's key, its audit entry and a message held for a user with no device: the
        // round trip (StoreExportTests) hands them over as they were.
        let key = APIKeyRecord(
            id: "0123456789abcdef",
            name: "crm",
            appID: StoreFixtures.appID,
            scopes: [.send],
            secretDigest: Array(repeating: 4, count: 32),
            ratePerSecond: 10,
            burst: 5,
            createdAt: t
        )
        #expect(try await store.insertAPIKey(key))
        try await store.appendAudit(
            AuditEntry(id: "a1", at: t, actor: "cli", action: "key.created", target: key.id, appID: key.appID)
        )
        let held = StoreFixtures.message("m-held", user: "u9", at: t, expires: t + 9)
        let waiting = StoreFixtures.ingest([], message: held)
        #expect(try await store.hold(waiting, until: t + 86_400_000, appID: nil) == .accepted)
        // An operator crosses; the operator's session does not.
        try await store.saveOperator(Self.operatorAccount)
        let session = ConsoleSessionRecord(
            id: "s1",
            operatorName: "ops",
            role: .operator,
            createdAt: t,
            expiresAt: t + 9
        )
        #expect(try await store.apply(.saveConsoleSession(session)) == .applied)

        var pending: [OutboxEntry] = []
        for id in ["c1", "p1", "p2", "p3"] {
            pending.append(try #require(try await store.push(id: id)))
        }
        return Source(
            apps: try await store.apps(),
            devices: [
                try #require(try await store.device(id: "d1")), try #require(try await store.device(id: "d2")),
                try #require(try await store.device(id: "d3")),
            ],
            recipients: try await store.recipients(userID: "u1"),
            message: try await store.message(id: "m1"),
            pending: pending,
            retriedLog: try await store.deliveryLog(pushID: "p3"),
            transcript: try await store.transcript(conversation: "chat1", after: 0),
            chats: [
                try #require(try await store.chat(conversation: "chat1")),
                try #require(try await store.chat(conversation: "chat2")),
            ],
            disconnects: try await store.disconnects(conversation: "chat1")
        )
    }

    static func event(_ conversation: String, _ user: String, agent: Bool, at: Int64) -> TranscriptEvent {
        TranscriptEvent(
            conversation: conversation,
            userID: user,
            type: "Message.Text",
            sealedAuthor: [UInt8]("sealed-author-\(at)".utf8),
            fromAgent: agent,
            sealedText: [UInt8]("sealed-text-\(at)".utf8),
            at: at
        )
    }

    /// Fills a SQLite store and closes it; returns what it held.
    static func filledDatabase(_ directory: Directory) async throws -> Source {
        let store = try openSQLite(directory.database)
        return try await fill(store)
    }

    /// Runs `body` with a PostgreSQL store on a fresh schema, dropped afterwards.
    static func withTarget(_ body: (PostgresStore) async throws -> Void) async throws {
        let engine = try PostgresEngine()
        do {
            try await body(try await engine.openStore(engine.makeStorage()))
        } catch {
            await engine.tearDown()
            throw error
        }
        await engine.tearDown()
    }

    static let expectedTally = StoreTally([
        .apps: 2, .devices: 3, .presence: 1, .messages: 2, .idempotencyKeys: 2, .pendingPushes: 4, .chats: 2,
        .transcriptEvents: 3, .disconnects: 1, .apiKeys: 1, .auditEntries: 1, .heldMessages: 1, .operators: 1,
    ])

    static let operatorAccount = OperatorRecord(
        name: "ops",
        role: .operator,
        passwordHash: "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
        createdAt: t
    )

    @Test("everything a relay needs arrives, sealed bytes as they were, and the dispatcher's path works on it")
    func migratesAndTheRelayCarriesOn() async throws {
        let directory = Directory()
        let source = try await Self.filledDatabase(directory)
        try await Self.withTarget { target in try await Self.checkMigration(directory, source, target) }
    }

    static func checkMigration(_ directory: Directory, _ source: Source, _ target: PostgresStore) async throws {
        let export = try SQLiteExport(path: directory.database)
        #expect(try await export.exportTally() == Self.expectedTally)
        let written = try await target.importAll(from: export, batchSize: 2)
        #expect(written == Self.expectedTally)
        #expect(try await target.importTally() == Self.expectedTally)

        #expect(try await target.apps() == source.apps)
        for device in source.devices {
            #expect(try await target.device(id: device.id) == device)
        }
        #expect(try await target.recipients(userID: "u1") == source.recipients)
        #expect(try await target.message(id: "m1") == source.message)
        #expect(source.message != nil)
        #expect(try await target.operators() == [Self.operatorAccount])
        #expect(try await target.consoleSession(id: "s1") == nil)

        // Pending pushes arrive queued, unclaimed, otherwise as they were; the delivered one not.
        for entry in source.pending {
            var expected = entry
            expected.state = .queued
            #expect(try await target.push(id: entry.pushID) == expected)
        }
        #expect(source.pending.filter { $0.state == .sending }.count == 3)
        #expect(try await target.push(id: "p4") == nil)
        #expect(try await target.deliveryLog(pushID: "p3") == source.retriedLog)
        #expect(source.retriedLog.count == 2)

        #expect(try await target.transcript(conversation: "chat1", after: 0) == source.transcript)
        #expect(try await target.chat(conversation: "chat1") == source.chats[0])
        #expect(try await target.chat(conversation: "chat2") == source.chats[1])
        #expect(try await target.disconnects(conversation: "chat1") == source.disconnects)
        #expect(try await target.pendingDisconnects() == source.disconnects)
        // The conversation's positions go on where they stopped.
        #expect(try await target.appendTranscript(Self.event("chat1", "u1", agent: true, at: Self.t + 100)) == 3)

        // A repeated ingest answers the first one's receipt, and writes nothing.
        let repeated = StoreFixtures.ingest(
            [StoreFixtures.push("p9", device: "d1", at: Self.t + 200)],
            key: "key-1",
            receipt: Array("other".utf8)
        )
        #expect(try await target.accept(repeated) == .duplicate(receipt: Array("receipt-1".utf8)))
        #expect(try await target.push(id: "p9") == nil)

        // A dispatcher on the new store gets every pending push, the call first, with its token.
        let claimed = try await target.claim(
            limit: 10,
            owner: "new-node",
            now: Self.t + 6_000,
            leaseUntil: Self.t + 66_000
        )
        #expect(claimed.first?.entry.pushID == "c1")
        #expect(Set(claimed.map(\.entry.pushID)) == ["c1", "p1", "p2", "p3"])
        let tokens = Dictionary(uniqueKeysWithValues: claimed.map { ($0.entry.pushID, $0.deviceToken) })
        #expect(tokens == ["c1": "bbd1", "p1": "aad1", "p2": "fcm-token-2", "p3": "aad3"])
        let attempts = Dictionary(uniqueKeysWithValues: claimed.map { ($0.entry.pushID, $0.entry.attempts) })
        #expect(attempts == Dictionary(uniqueKeysWithValues: source.pending.map { ($0.pushID, $0.attempts + 1) }))
        #expect(try await target.outboxCounts()[.sending] == 4)
    }

    @Test("a database that holds Herald data is refused, and nothing is added to it")
    func refusesATargetWithData() async throws {
        let directory = Directory()
        _ = try await Self.filledDatabase(directory)
        try await Self.withTarget { target in try await Self.checkRefusal(directory, target) }
    }

    static func checkRefusal(_ directory: Directory, _ target: PostgresStore) async throws {
        try await target.saveApp(AppRecord(id: "com.example.live", teamID: "TEAM000000"))

        let export = try SQLiteExport(path: directory.database)
        await #expect(throws: StoreError.conflict) { try await target.importAll(from: export, batchSize: 100) }
        #expect(try await target.importTally() == StoreTally([.apps: 1]))
    }

    @Test("a copy that fails half-way leaves the database untouched, and runs again")
    func failureHalfWayWritesNothing() async throws {
        let directory = Directory()
        _ = try await Self.filledDatabase(directory)
        try await Self.withTarget { target in try await Self.checkFailure(directory, target) }
    }

    static func checkFailure(_ directory: Directory, _ target: PostgresStore) async throws {
        let export = try SQLiteExport(path: directory.database)

        await #expect(throws: Broken.self) {
            try await target.importAll(from: FailingExport(inner: export, batches: 3), batchSize: 2)
        }
        #expect(try await target.importTally() == StoreTally())
        #expect(try await target.device(id: "d1") == nil)

        // The source said more than it handed over: refused before the commit.
        await #expect(throws: StoreError.conflict) {
            try await target.importAll(from: OverstatedExport(inner: export), batchSize: 100)
        }
        #expect(try await target.importTally() == StoreTally())

        #expect(try await target.importAll(from: export, batchSize: 100) == expectedTally)
    }

    @Test("the export refuses a database another process has open, a missing file and a newer schema")
    func exportRefusals() async throws {
        let directory = Directory()
        let store = try Self.openSQLite(directory.database)
        try await store.saveApp(StoreFixtures.app())
        #expect(throws: StoreError.unavailable) { try SQLiteExport(path: directory.database) }
        do {
            _ = try SQLiteExport(path: directory.database)
        } catch {
            #expect(error.detail.contains("open in another process"))
        }
        withExtendedLifetime(store) {}

        #expect(throws: StoreError.unavailable) { try SQLiteExport(path: directory.path + "/missing.sqlite") }
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/missing.sqlite"))

        let newer = directory.path + "/newer.sqlite"
        _ = try Self.openSQLite(newer)
        let queue = try DatabaseQueue(path: newer)
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')")
        }
        try queue.close()
        do {
            _ = try SQLiteExport(path: newer)
            Issue.record("a newer schema was exported")
        } catch {
            #expect(error.detail.contains("newer Herald"))
        }
    }
}

struct Broken: Error {}

/// Hands over `batches` batches of `inner`'s export, then fails: a source lost half-way.
struct FailingExport: StoreExport {
    let inner: any StoreExport
    let batches: Int

    func exportTally() async throws -> StoreTally { try await inner.exportTally() }

    func export(batchSize: Int, into sink: @Sendable ([StoreRecord]) async throws -> Void) async throws {
        let count = Counter()
        let batches = batches
        try await inner.export(batchSize: batchSize) { records in
            guard count.next() <= batches else { throw Broken() }
            try await sink(records)
        }
    }

    final class Counter: Sendable {
        private let value = Mutex(0)
        func next() -> Int {
            value.withLock {
                $0 += 1
                return $0
            }
        }
    }
}

/// Tallies one device more than it hands over.
struct OverstatedExport: StoreExport {
    let inner: any StoreExport

    func exportTally() async throws -> StoreTally {
        var tally = try await inner.exportTally()
        tally[.devices] += 1
        return tally
    }

    func export(batchSize: Int, into sink: @Sendable ([StoreRecord]) async throws -> Void) async throws {
        try await inner.export(batchSize: batchSize, into: sink)
    }
}

/// Callbacks with long histories, handed over in one batch: more values than one PostgreSQL
/// statement takes (65,535), so the import must split the history's INSERT.
struct LongHistoriesExport: StoreExport {
    static let callbacks = 3
    static let lines = 3_000

    static func records() -> [StoreRecord] {
        (0..<callbacks).map { index in
            let id = "long-\(index)"
            let history = (0..<lines).map { line in
                CallbackHistoryEntry(
                    at: Int64(line),
                    event: line % 2 == 0 ? .pushed : .action,
                    state: line % 2 == 0 ? .pushed : .scheduled,
                    action: line % 2 == 0 ? nil : "snooze",
                    sequence: line % 2 == 0 ? line / 2 + 1 : nil,
                    nextPushAt: line % 2 == 0 ? nil : Int64(line + 300_000)
                )
            }
            let callback = CallbackRecord(
                id: id,
                appID: StoreFixtures.appID,
                userID: "u",
                state: .scheduled,
                sealedDialog: [UInt8](repeating: UInt8(index), count: 64),
                dueAt: 10_000,
                expiresAt: 20_000_000,
                pushes: lines / 2,
                version: lines * 2,
                lastAction: "snooze",
                createdAt: 0,
                updatedAt: Int64(lines)
            )
            return .callback(CallbackTransfer(callback: callback, history: history, idempotencyKey: "key-\(index)"))
        }
    }

    func exportTally() async throws -> StoreTally {
        StoreTally([.callbacks: Self.callbacks])
    }

    func export(batchSize: Int, into sink: @Sendable ([StoreRecord]) async throws -> Void) async throws {
        try await sink(Self.records())
    }
}

extension StoreMigrateTests {
    @Test("callbacks whose histories take more values than one statement are imported whole")
    func longCallbackHistories() async throws {
        try await Self.withTarget { target in try await Self.checkLongHistories(target) }
    }

    static func checkLongHistories(_ target: PostgresStore) async throws {
        let written = try await target.importAll(from: LongHistoriesExport(), batchSize: 100)
        #expect(written == StoreTally([.callbacks: LongHistoriesExport.callbacks]))
        for case .callback(let transfer) in LongHistoriesExport.records() {
            #expect(try await target.callback(id: transfer.callback.id) == transfer.callback)
            #expect(try await target.callbackHistory(id: transfer.callback.id) == transfer.history)
        }
    }
}
