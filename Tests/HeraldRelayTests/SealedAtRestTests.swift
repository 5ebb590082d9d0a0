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

    @Test("a chat event's author id and name are nowhere in the database's files, and read back in the transcript")
    func authorSealed() async throws {
        let directory = NSTemporaryDirectory() + "herald-at-rest-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/herald.sqlite"
        let store = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.at-rest"))
        let relay = Self.relay(store, MasterKey.generate())
        _ = try await relay.transcripts.chatEvent(
            conversation: "chat-1",
            ChatEventRequest(
                to: "alice",
                type: "Message.Text",
                from: Party(id: "agent-sentinel-8", name: "Eli Sentinel"),
                text: "Your parcel is at door 43"
            )
        )
        for needle in ["Eli Sentinel", "agent-sentinel-8", "door 43"] {
            #expect(!Self.filesContain(path, needle), "\(needle) is in the database's files")
        }
        let view = try await relay.transcripts.transcript(
            conversation: "chat-1",
            after: 0,
            for: StoreFixtures.device("d1", user: "alice")
        )
        #expect(view.events.map(\.from) == [Party(id: "agent-sentinel-8", name: "Eli Sentinel")])
        #expect(view.events.map(\.text) == ["Your parcel is at door 43"])
    }

    @Test("senders and chat authors an older version stored in the clear are sealed at start and read back the same")
    func clearSendersSealedAtStart() async throws {
        let directory = NSTemporaryDirectory() + "herald-reseal-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/herald.sqlite"
        let masterKey = MasterKey.generate()
        let text = masterKey.seal(SecureBytes(copying: Array("Hello".utf8)), context: "herald-message-text:m1")
        // As the older version sealed an event's text: bound to the conversation, time and author.
        let line = masterKey.seal(
            SecureBytes(copying: Array("Hi there".utf8)),
            context: "herald-transcript:chat-1:5:agent-sentinel-8"
        )
        // A database as v6 left it: the message's sender in the clear.
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteStore.migrator.migrate(queue, upTo: "v6: the push network in a column")
            try await queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO messages
                            (id, user_id, conversation, sender_id, sender_name, sealed_text, created_at, expires_at)
                        VALUES ('m1', 'alice', 'c', 'agent-sentinel-7', 'Dana Sentinel', ?, 1, 9999999999999);
                        INSERT INTO transcript_events
                            (conversation, position, user_id, type, author_id, author_name, from_agent, sealed_text, at)
                        VALUES ('chat-1', 1, 'alice', 'Message.Text', 'agent-sentinel-8', 'Eli Sentinel', 1, ?, 5);
                        """,
                    arguments: [Data(text), Data(line)]
                )
            }
        }
        let store = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.reseal"))
        let relay = Self.relay(store, masterKey)
        #expect(try await relay.sealClearSenders() == 2)
        #expect(try await relay.sealClearSenders() == 0)
        for needle in ["Dana Sentinel", "agent-sentinel-7", "Eli Sentinel", "agent-sentinel-8"] {
            #expect(!Self.filesContain(path, needle), "\(needle) is in the database's files")
        }
        let view = try await relay.ingest.message(id: "m1", for: StoreFixtures.device("d1", user: "alice"))
        #expect(view.from == Party(id: "agent-sentinel-7", name: "Dana Sentinel") && view.text == "Hello")
        let transcript = try await relay.transcripts.transcript(
            conversation: "chat-1",
            after: 0,
            for: StoreFixtures.device("d1", user: "alice")
        )
        #expect(transcript.events.map(\.from) == [Party(id: "agent-sentinel-8", name: "Eli Sentinel")])
        #expect(transcript.events.map(\.text) == ["Hi there"])
    }
}
