import Foundation
import GRDB
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Logging
import Testing

@testable import HeraldStoreSQLite

/// What a curious reader of the database file learns about a message: its ids and times, never
/// its sender or its text.
@Suite("Messages sealed at rest", .timeLimit(.minutes(2)))
struct SealedAtRestTests {
    /// Whether `needle` appears anywhere in the database, its WAL or its shared-memory file.
    static func filesContain(_ path: String, _ needle: String) -> Bool {
        [path, path + "-wal", path + "-shm"].contains { file in
            guard let bytes = FileManager.default.contents(atPath: file) else { return false }
            return bytes.range(of: Data(needle.utf8)) != nil
        }
    }

    static func relay(_ store: SQLiteStore, _ masterKey: MasterKey) -> Relay {
        Relay(store: store, masterKey: masterKey, logger: Logger(label: "test.at-rest"))
    }

    @Test("a message's sender id and name are nowhere in the database's files, and read back by id")
    func senderSealed() async throws {
        let directory = NSTemporaryDirectory() + "herald-at-rest-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/herald.sqlite"
        let store = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.at-rest"))
        let relay = Self.relay(store, MasterKey.generate())
        let receipt = try await relay.ingest.send(
            message: MessageRequest(
                to: "alice",
                from: Party(id: "agent-sentinel-7", name: "Dana Sentinel"),
                conversation: "order-1001",
                text: "Your parcel is at door 42"
            )
        )
        for needle in ["Dana Sentinel", "agent-sentinel-7", "door 42"] {
            #expect(!Self.filesContain(path, needle), "\(needle) is in the database's files")
        }
        let view = try await relay.ingest.message(id: receipt.id, for: StoreFixtures.device("d1", user: "alice"))
        #expect(view.from == Party(id: "agent-sentinel-7", name: "Dana Sentinel"))
        #expect(view.text == "Your parcel is at door 42")
    }

    @Test("senders an older version stored in the clear are sealed at start and read back the same")
    func clearSendersSealedAtStart() async throws {
        let directory = NSTemporaryDirectory() + "herald-reseal-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/herald.sqlite"
        let masterKey = MasterKey.generate()
        let text = masterKey.seal(SecureBytes(copying: Array("Hello".utf8)), context: "herald-message-text:m1")
        // A database as v6 left it: the message's sender in the clear.
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteStore.migrator.migrate(queue, upTo: "v6: the push network in a column")
            try await queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO messages
                            (id, user_id, conversation, sender_id, sender_name, sealed_text, created_at, expires_at)
                        VALUES ('m1', 'alice', 'c', 'agent-sentinel-7', 'Dana Sentinel', ?, 1, 9999999999999)
                        """,
                    arguments: [Data(text)]
                )
            }
        }
        let store = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.reseal"))
        let relay = Self.relay(store, masterKey)
        #expect(try await relay.ingest.sealClearSenders() == 1)
        #expect(try await relay.ingest.sealClearSenders() == 0)
        for needle in ["Dana Sentinel", "agent-sentinel-7"] {
            #expect(!Self.filesContain(path, needle), "\(needle) is in the database's files")
        }
        let view = try await relay.ingest.message(id: "m1", for: StoreFixtures.device("d1", user: "alice"))
        #expect(view.from == Party(id: "agent-sentinel-7", name: "Dana Sentinel") && view.text == "Hello")
    }
}
