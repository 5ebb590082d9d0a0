import Foundation
import GRDB
import HeraldPush
import HeraldStore
import HeraldTestSupport
import Logging
import Testing

@testable import HeraldStoreSQLite

/// What only the SQLite store does: group commit, and its migrations. The rules every engine keeps
/// are in `SQLiteConformanceTests`.
@Suite("SQLite store", .timeLimit(.minutes(2)))
struct SQLiteStoreTests {
    static func withStore(_ body: (SQLiteStore) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "herald-store-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(
            configuration: .init(path: directory + "/herald.sqlite"),
            logger: Logger(label: "test.store")
        )
        try await store.saveApp(StoreFixtures.app())
        try await body(store)
    }

    @Test("one failing write in a group does not undo the others")
    func failingWriteInGroup() async throws {
        try await Self.withStore { store in
            try await store.saveDevice(StoreFixtures.device("d1"))
            _ = try await store.accept(StoreFixtures.ingest([StoreFixtures.push("taken", device: "d1", at: 0)]))
            let results = await withTaskGroup(of: (Int, Bool).self) { group in
                for index in 0..<40 {
                    group.addTask {
                        // Every fourth reuses a push id that exists: a primary-key conflict.
                        let id = index % 4 == 0 ? "taken" : "fresh-\(index)"
                        let outcome = try? await store.accept(
                            StoreFixtures.ingest([StoreFixtures.push(id, device: "d1", at: 1)])
                        )
                        return (index, outcome == .accepted)
                    }
                }
                var all: [Int: Bool] = [:]
                for await (index, accepted) in group { all[index] = accepted }
                return all
            }
            #expect(results.count == 40)
            for (index, accepted) in results { #expect(accepted == (index % 4 != 0), "write \(index)") }
            for index in 0..<40 where index % 4 != 0 {
                #expect(try await store.push(id: "fresh-\(index)") != nil)
            }
            #expect(try await store.push(id: "taken")?.createdAt == 0)
        }
    }

    @Test("v6 moves the network out of push_type: old APNs and FCM rows read back typed")
    func migrationV6() async throws {
        let directory = NSTemporaryDirectory() + "herald-v6-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/herald.sqlite"
        // A database as v5 left it, with one push of each kind as v5 wrote them.
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteStore.migrator.migrate(queue, upTo: "v5: collapse by conversation")
            try await queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO outbox (push_id, device_id, kind, subject_id, priority, apns_id, topic, push_type,
                            collapse_id, attempts, next_attempt_at, expires_at, state, created_at, updated_at)
                        VALUES
                            ('a', 'd1', 'message', 'm', 5, 'A-ID', 'com.example.chat', 'alert', 'c', 0, 1, 9000, 'queued', 1, 1),
                            ('v', 'd1', 'call', 'k', 10, 'V-ID', 'com.example.chat.voip', 'voip', NULL, 0, 1, 9000, 'queued', 1, 1),
                            ('f', 'd2', 'message', 'm', 5, 'f', 'com.example.chat', 'fcm', NULL, 2, 1, 9000, 'delivered', 1, 3);
                        INSERT INTO outbox_payloads (push_id, payload) VALUES
                            ('a', '{"aps":{}}'), ('v', '{"herald":{}}'), ('f', '{"kind":"message","sealed":"S"}');
                        """
                )
            }
        }
        let store = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.v6"))
        #expect(
            try await store.push(id: "a")?.payload
                == .apns(
                    APNsPayload(
                        topic: "com.example.chat",
                        type: .alert,
                        priority: .conserve,
                        apnsID: "A-ID",
                        json: #"{"aps":{}}"#
                    )
                )
        )
        #expect(
            try await store.push(id: "v")?.payload
                == .apns(
                    APNsPayload(
                        topic: "com.example.chat.voip",
                        type: .voip,
                        priority: .immediate,
                        apnsID: "V-ID",
                        json: #"{"herald":{}}"#
                    )
                )
        )
        let fcm = try #require(try await store.push(id: "f"))
        #expect(
            fcm.payload
                == .fcm(
                    FCMPayload(package: "com.example.chat", priority: .high, data: ["kind": "message", "sealed": "S"])
                )
        )
        #expect((fcm.state, fcm.attempts, fcm.apnsID) == (.delivered, 2, "f"))
        #expect(try await store.push(id: "a")?.collapseID == "c")
        // The queue's partial indexes came back with the rebuilt table (and v9's by network, v12's
        // for listings, v29's by subject, which replaced v24's for a callback's pushes).
        let indexes = try await store.read { db in
            try String.fetchAll(
                db,
                sql:
                    "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'outbox' AND sql IS NOT NULL ORDER BY name"
            )
        }
        #expect(
            indexes == [
                "outbox_by_age", "outbox_by_device", "outbox_by_subject", "outbox_finished", "outbox_queued",
                "outbox_queued_by_network", "outbox_queued_due", "outbox_sending",
            ]
        )
    }
}
