import Foundation
import GRDB
import HeraldStore
import HeraldTestSupport
import Logging
import Testing

@testable import HeraldStoreSQLite

/// What a reader of the database's files finds: no clear sender, files only Herald's user reads.
@Suite("SQLite store at rest", .timeLimit(.minutes(2)))
struct SQLiteAtRestTests {
    static func temporaryDirectory(_ name: String) -> String {
        NSTemporaryDirectory() + "herald-\(name)-\(UUID().uuidString)"
    }

    /// The permission bits of `path`.
    static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return try #require(attributes[.posixPermissions] as? Int)
    }

    /// Whether `needle` appears anywhere in the database, its WAL or its shared-memory file.
    static func filesContain(_ path: String, _ needle: String) -> Bool {
        [path, path + "-wal", path + "-shm"].contains { file in
            guard let bytes = FileManager.default.contents(atPath: file) else { return false }
            return bytes.range(of: Data(needle.utf8)) != nil
        }
    }

    @Test("the database, its WAL and shared memory are 0600, the directories made for them 0700, whatever the umask")
    func fileModes() async throws {
        let root = Self.temporaryDirectory("modes")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/data/herald.sqlite"
        let store = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.modes"))
        try await store.saveApp(StoreFixtures.app())
        try await store.saveDevice(StoreFixtures.device("d1"))
        for file in [path, path + "-wal", path + "-shm"] {
            #expect(try Self.mode(file) == 0o600, "\(file)")
        }
        #expect(try Self.mode(root) == 0o700)
        #expect(try Self.mode(root + "/data") == 0o700)
    }

    @Test(
        "an existing database left 0644 by an older version is 0600 once opened; an existing directory keeps its mode"
    )
    func existingFilesTightened() async throws {
        let root = Self.temporaryDirectory("tighten")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: root)
        let path = root + "/herald.sqlite"
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteStore.migrator.migrate(queue)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        _ = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.tighten"))
        #expect(try Self.mode(path) == 0o600)
        #expect(try Self.mode(root) == 0o755)
    }

    @Test("v7 moves senders and authors stored in the clear aside; once sealed, none is left in any of the files")
    func migrationV7() async throws {
        let directory = Self.temporaryDirectory("v7")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/herald.sqlite"
        // A database as v6 left it, with two messages as v6 wrote them (sender in the clear).
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteStore.migrator.migrate(queue, upTo: "v6: the push network in a column")
            try await queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO messages
                            (id, user_id, conversation, sender_id, sender_name, sealed_text, created_at, expires_at)
                        VALUES
                            ('m1', 'u', 'c', 'agent-sentinel-7', 'Dana Sentinel', X'010203', 1, 9000),
                            ('m2', 'u', 'c', 'agent-sentinel-8', 'Eli Sentinel', X'040506', 2, 9000),
                            ('m3', 'u', 'c', 'agent-sentinel-9', 'Old Sentinel', X'070809', 3, 50);
                        INSERT INTO transcript_events
                            (conversation, position, user_id, type, author_id, author_name, from_agent, sealed_text, at)
                        VALUES
                            ('chat-1', 1, 'u', 'Message.Text', 'agent-sentinel-10', 'Fay Sentinel', 1, X'0A', 4);
                        """
                )
            }
        }
        #expect(Self.filesContain(path, "Dana Sentinel"), "the old database holds the name in the clear")

        let store = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.v7"))
        let clear = Set(try await store.clearSenders(limit: 10))
        let event = ClearSender.Record.transcriptEvent(conversation: "chat-1", position: 1)
        #expect(
            clear == [
                ClearSender(
                    record: .message(id: "m1"),
                    senderID: "agent-sentinel-7",
                    senderName: "Dana Sentinel",
                    at: 1
                ),
                ClearSender(
                    record: .message(id: "m2"),
                    senderID: "agent-sentinel-8",
                    senderName: "Eli Sentinel",
                    at: 2
                ),
                ClearSender(
                    record: .message(id: "m3"),
                    senderID: "agent-sentinel-9",
                    senderName: "Old Sentinel",
                    at: 3
                ),
                ClearSender(record: event, senderID: "agent-sentinel-10", senderName: "Fay Sentinel", at: 4),
            ]
        )
        #expect(try await store.clearSenders(limit: 1).count == 1)
        #expect(try await store.clearSenders(limit: 3).count == 3)
        #expect(try await store.transcript(conversation: "chat-1", after: 0).map(\.sealedAuthor) == [[]])
        // Not sealed yet: the message reads back with no sealed sender, the rest as written.
        #expect(try await store.message(id: "m1")?.sealedSender == [])
        #expect(try await store.message(id: "m1")?.sealedText == [1, 2, 3])
        // Retention takes a message's clear sender with it.
        #expect(try await store.deleteExpired(now: 100, historyBefore: 0).messages == 1)
        #expect(try await store.clearSenders(limit: 10).count == 3)

        try await store.sealSenders([.message(id: "m1"): [0xA1], .message(id: "m2"): [0xA2], event: [0xA3]])
        #expect(try await store.clearSenders(limit: 10) == [])
        #expect(try await store.message(id: "m1")?.sealedSender == [0xA1])
        #expect(try await store.message(id: "m2")?.sealedSender == [0xA2])
        #expect(try await store.transcript(conversation: "chat-1", after: 0).map(\.sealedAuthor) == [[0xA3]])
        for needle in ["Dana Sentinel", "Eli Sentinel", "Old Sentinel", "Fay Sentinel", "agent-sentinel"] {
            #expect(!Self.filesContain(path, needle), "\(needle) is still in the files")
        }
    }

    @Test("v8 opens a chat for each conversation with a transcript, so idle chats end and are purged")
    func migrationV8() async throws {
        let directory = Self.temporaryDirectory("v8")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/herald.sqlite"
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteStore.migrator.migrate(queue, upTo: "v7: sealed senders")
            try await queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO transcript_events
                            (conversation, position, user_id, type, sealed_author, from_agent, sealed_text, at)
                        VALUES
                            ('chat-1', 1, 'cust', 'Message.Text', X'A1', 1, X'01', 100),
                            ('chat-1', 2, 'cust', 'Message.Text', X'A1', 1, X'02', 300);
                        """
                )
            }
        }
        let store = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.v8"))
        #expect(
            try await store.chat(conversation: "chat-1")
                == ChatRecord(conversation: "chat-1", userID: "cust", startedAt: 100, lastEventAt: 300)
        )
        #expect(try await store.endIdleChats(now: 1_300, idle: 1_000) == 1)
        #expect(try await store.deleteEndedChats(endedBefore: 1_301) == 1)
        #expect(try await store.transcript(conversation: "chat-1", after: 0) == [])
    }
}
