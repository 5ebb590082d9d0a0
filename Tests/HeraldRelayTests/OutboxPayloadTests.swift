import Foundation
import GRDB
import HeraldPush
import HeraldStore
import Logging
import Testing

@testable import HeraldStoreSQLite

/// The outbox keeps a push's network and its typed payload, and the v6 migration carries the
/// rows written before the network had its own column.
@Suite(.timeLimit(.minutes(1)))
struct OutboxPayloadTests {
    @Test("an FCM push is stored and claimed with its network, priority and data, to the messaging token")
    func fcmRoundTrip() async throws {
        try await SQLiteStoreTests.withStore { store, _ in
            var device = SQLiteStoreTests.device("a1", token: "fcm-token-a1")
            device.platform = .android
            try await store.saveDevice(device)
            var entry = SQLiteStoreTests.push("f1", device: "a1", kind: .call, at: 1)
            let data = ["kind": "call", "sealed": "AT\"x\\y/", "call_id": "c-1"]
            entry.payload = .fcm(FCMPayload(package: "com.example.chat", priority: .high, data: data))
            _ = try await store.accept(Ingest(idempotencyKey: nil, message: nil, pushes: [entry], receipt: []))
            #expect(try await store.push(id: "f1")?.payload == entry.payload)
            let claimed = try await store.claim(limit: 10, owner: "w", now: 2, leaseUntil: 100)
            #expect(
                claimed.map(\.push) == [
                    Push(id: "f1", token: "fcm-token-a1", payload: entry.payload, expiration: 1_000, collapseID: nil)
                ]
            )
        }
    }

    @Test("a VoIP push is claimed to the PushKit token, an alert to the messaging token")
    func tokensByType() async throws {
        try await SQLiteStoreTests.withStore { store, _ in
            try await store.saveDevice(SQLiteStoreTests.device("d1", token: "msg", voip: "voip"))
            let pushes = [
                SQLiteStoreTests.push("c1", device: "d1", kind: .call, at: 1),
                SQLiteStoreTests.push("m1", device: "d1", kind: .message, at: 1),
            ]
            _ = try await store.accept(Ingest(idempotencyKey: nil, message: nil, pushes: pushes, receipt: []))
            let claimed = try await store.claim(limit: 10, owner: "w", now: 2, leaseUntil: 100)
            #expect(claimed.map { [$0.entry.pushID, $0.deviceToken] } == [["c1", "voip"], ["m1", "msg"]])
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
        // The queue's partial indexes came back with the rebuilt table.
        let indexes = try await store.read { db in
            try String.fetchAll(
                db,
                sql:
                    "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'outbox' AND sql IS NOT NULL ORDER BY name"
            )
        }
        #expect(indexes == ["outbox_finished", "outbox_queued", "outbox_queued_due", "outbox_sending"])
    }
}
