import Foundation
import HeraldPush
import HeraldStore
import HeraldStoreSQLite
import Logging
import Testing

/// The SQLite store's outbox rules, directly: order, exclusive claims, leases, restarts.
@Suite("SQLite store", .timeLimit(.minutes(1)))
struct SQLiteStoreTests {
    static func withStore(_ body: (SQLiteStore, String) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "herald-store-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/herald.sqlite"
        let store = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.store"))
        try await store.saveApp(AppRecord(id: "com.example.chat", teamID: "TEAM123456"))
        try await body(store, path)
    }

    static func device(_ id: String, user: String = "u", token: String? = nil, voip: String? = nil) -> DeviceRecord {
        DeviceRecord(
            id: id,
            userID: user,
            appID: "com.example.chat",
            platform: .ios,
            messagingToken: token ?? "aa" + id,
            voipToken: voip ?? "bb" + id,
            keyID: "0011223344556677",
            previousKeyID: nil,
            devicePublicKey: [1],
            relayPublicKey: [2],
            sealedRelaySecretKey: [3],
            sealedSessionKeys: [4],
            credentialHash: [5],
            createdAt: 0,
            updatedAt: 0
        )
    }

    static func push(
        _ id: String,
        device: String,
        kind: OutboxKind = .message,
        at time: Int64,
        expires: Int64 = 1_000_000
    )
        -> OutboxEntry
    {
        OutboxEntry(
            pushID: id,
            deviceID: device,
            kind: kind,
            subjectID: "s-" + id,
            priority: kind == .call ? 10 : 5,
            payload: payload(id: id, kind: kind),
            nextAttemptAt: time,
            expiresAt: expires,
            createdAt: time,
            updatedAt: time
        )
    }

    static func payload(id: String, kind: OutboxKind) -> Push.Payload {
        .apns(
            APNsPayload(
                topic: kind == .call ? "com.example.chat.voip" : "com.example.chat",
                type: kind == .call ? .voip : .alert,
                priority: kind == .call ? .immediate : .conserve,
                apnsID: id,
                json: "{}"
            )
        )
    }

    @Test("claims take calls first, then the longest waiting; expired and tokenless pushes are finished instead")
    func claimOrder() async throws {
        try await Self.withStore { store, _ in
            try await store.saveDevice(Self.device("d1"))
            try await store.saveDevice(Self.device("d2"))
            let pushes = [
                Self.push("m-late", device: "d1", at: 30),
                Self.push("m-early", device: "d1", at: 10),
                Self.push("c-1", device: "d1", kind: .call, at: 40),
                Self.push("m-expired", device: "d1", at: 5, expires: 50),
                Self.push("m-gone", device: "nobody", at: 1),
                Self.push("m-future", device: "d2", at: 500),
            ]
            #expect(
                try await store.accept(Ingest(idempotencyKey: nil, message: nil, pushes: pushes, receipt: []))
                    == .accepted
            )
            let claimed = try await store.claim(limit: 10, owner: "w1", now: 100, leaseUntil: 1000)
            #expect(claimed.map(\.entry.pushID) == ["c-1", "m-early", "m-late"])
            #expect(claimed.first?.deviceToken == "bbd1")
            #expect(claimed.allSatisfy { $0.entry.state == .sending && $0.entry.attempts == 1 })
            #expect(try await store.push(id: "m-expired")?.state == .expired)
            #expect(try await store.push(id: "m-gone")?.state == .skipped)
            #expect(try await store.push(id: "m-future")?.state == .queued)
            #expect(try await store.nextDueTime() == 500)
        }
    }

    @Test("two workers never claim the same push")
    func exclusiveClaims() async throws {
        try await Self.withStore { store, _ in
            try await store.saveDevice(Self.device("d1"))
            let pushes = (0..<400).map { Self.push("p\($0)", device: "d1", at: Int64($0)) }
            _ = try await store.accept(Ingest(idempotencyKey: nil, message: nil, pushes: pushes, receipt: []))
            let all = try await withThrowingTaskGroup(of: [String].self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var mine: [String] = []
                        while true {
                            let batch = try await store.claim(
                                limit: 7,
                                owner: "w\(worker)",
                                now: 1000,
                                leaseUntil: 9000
                            )
                            if batch.isEmpty { return mine }
                            mine += batch.map(\.entry.pushID)
                        }
                    }
                }
                var collected: [String] = []
                for try await part in group { collected += part }
                return collected
            }
            #expect(all.count == 400)
            #expect(Set(all).count == 400)
        }
    }

    @Test("a lapsed lease and a restarted owner put pushes back; completions record retries and dead tokens")
    func leasesAndCompletions() async throws {
        try await Self.withStore { store, path in
            try await store.saveDevice(Self.device("d1", token: "abcdef01"))
            _ = try await store.accept(
                Ingest(
                    idempotencyKey: nil,
                    message: nil,
                    pushes: [Self.push("a", device: "d1", at: 0), Self.push("b", device: "d1", at: 1)],
                    receipt: []
                )
            )
            #expect(try await store.claim(limit: 1, owner: "w1", now: 10, leaseUntil: 20).map(\.entry.pushID) == ["a"])
            #expect(
                try await store.claim(limit: 1, owner: "w2", now: 11, leaseUntil: 5000).map(\.entry.pushID) == ["b"]
            )
            // w1's lease lapses: another worker may take "a" again.
            let again = try await store.claim(limit: 5, owner: "w3", now: 30, leaseUntil: 5000)
            #expect(again.map(\.entry.pushID) == ["a"])
            #expect(again.first?.entry.attempts == 2)

            // A new store on the same file (a restart): w2's claims go back.
            let reopened = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.store"))
            #expect(try await reopened.releaseClaims(owner: "w2", now: 40) == 1)
            #expect(try await reopened.push(id: "b")?.state == .queued)

            try await reopened.complete(
                [
                    PushCompletion(
                        pushID: "a",
                        disposition: .retry(at: 100),
                        reason: "TooManyRequests",
                        deadToken: nil
                    ),
                    PushCompletion(
                        pushID: "b",
                        disposition: .finish(.tokenDead),
                        reason: "Unregistered",
                        deadToken: ("d1", "abcdef01")
                    ),
                ],
                now: 50
            )
            let a = try #require(try await reopened.push(id: "a"))
            #expect(a.state == .queued && a.nextAttemptAt == 100 && a.lastReason == "TooManyRequests")
            #expect(try await reopened.push(id: "b")?.state == .tokenDead)
            let device = try #require(try await reopened.device(id: "d1"))
            #expect(device.messagingToken == nil && device.tokenDeadReason == "Unregistered")
            #expect(device.voipToken == "bbd1")
            #expect(try await reopened.deliveryLog(pushID: "b").map(\.state) == [.queued, .tokenDead])
            #expect(try await reopened.deliveryLog(pushID: "a").map(\.state) == [.queued, .queued])
            #expect(try await reopened.deliveryLog(pushID: "a").last?.reason == "TooManyRequests")
        }
    }

    @Test("a repeated idempotency key writes nothing and returns the first receipt")
    func idempotentAccept() async throws {
        try await Self.withStore { store, _ in
            try await store.saveDevice(Self.device("d1"))
            let first = Ingest(
                idempotencyKey: "k",
                message: nil,
                pushes: [Self.push("x", device: "d1", at: 0)],
                receipt: [1, 2]
            )
            let second = Ingest(
                idempotencyKey: "k",
                message: nil,
                pushes: [Self.push("y", device: "d1", at: 0)],
                receipt: [9]
            )
            #expect(try await store.accept(first) == .accepted)
            #expect(try await store.accept(second) == .duplicate(receipt: [1, 2]))
            #expect(try await store.push(id: "y") == nil)
            // Concurrent duplicates: exactly one is accepted.
            let outcomes = try await withThrowingTaskGroup(of: IngestOutcome.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        try await store.accept(
                            Ingest(
                                idempotencyKey: "race",
                                message: nil,
                                pushes: [Self.push("race-\(index)", device: "d1", at: 0)],
                                receipt: [UInt8(index)]
                            )
                        )
                    }
                }
                var all: [IngestOutcome] = []
                for try await outcome in group { all.append(outcome) }
                return all
            }
            #expect(outcomes.filter { $0 == .accepted }.count == 1)
        }
    }

    @Test("one failing write in a group does not undo the others")
    func failingWriteInGroup() async throws {
        try await Self.withStore { store, _ in
            try await store.saveDevice(Self.device("d1"))
            _ = try await store.accept(
                Ingest(
                    idempotencyKey: nil,
                    message: nil,
                    pushes: [Self.push("taken", device: "d1", at: 0)],
                    receipt: []
                )
            )
            let results = await withTaskGroup(of: (Int, Bool).self) { group in
                for index in 0..<40 {
                    group.addTask {
                        // Every fourth reuses a push id that exists: a primary-key conflict.
                        let id = index % 4 == 0 ? "taken" : "fresh-\(index)"
                        let outcome = try? await store.accept(
                            Ingest(
                                idempotencyKey: nil,
                                message: nil,
                                pushes: [Self.push(id, device: "d1", at: 1)],
                                receipt: []
                            )
                        )
                        return (index, outcome == .accepted)
                    }
                }
                var all: [Int: Bool] = [:]
                for await (index, accepted) in group { all[index] = accepted }
                return all
            }
            for (index, accepted) in results { #expect(accepted == (index % 4 != 0), "write \(index)") }
            for index in 0..<40 where index % 4 != 0 {
                #expect(try await store.push(id: "fresh-\(index)") != nil)
            }
            #expect(try await store.push(id: "taken")?.createdAt == 0)
        }
    }

    @Test("retention: expired messages, old idempotency keys and old finished pushes go; queued pushes stay")
    func retention() async throws {
        try await Self.withStore { store, _ in
            try await store.saveDevice(Self.device("d1"))
            let message = MessageRecord(
                id: "m1",
                userID: "u",
                conversation: "c",
                senderID: "s",
                senderName: "S",
                sealedText: [1],
                createdAt: 0,
                expiresAt: 100
            )
            _ = try await store.accept(
                Ingest(
                    idempotencyKey: "k1",
                    message: message,
                    pushes: [
                        Self.push("old-done", device: "d1", at: 0),
                        Self.push("old-queued", device: "d1", at: 0, expires: 99_999_999),
                    ],
                    receipt: [7]
                )
            )
            _ = try await store.claim(limit: 1, owner: "w", now: 10, leaseUntil: 20)
            try await store.complete(
                [PushCompletion(pushID: "old-done", disposition: .finish(.delivered), reason: nil, deadToken: nil)],
                now: 20
            )
            try await store.complete(
                [PushCompletion(pushID: "old-queued", disposition: .retry(at: 5_000), reason: "later", deadToken: nil)],
                now: 20
            )
            #expect(try await store.push(id: "old-done")?.payload == Self.payload(id: "old-done", kind: .message))
            let removed = try await store.deleteExpired(now: 1_000, historyBefore: 500)
            #expect(removed.messages == 1 && removed.pushes == 1)
            #expect(try await store.message(id: "m1") == nil)
            #expect(try await store.push(id: "old-done") == nil)
            #expect(try await store.deliveryLog(pushID: "old-done").isEmpty)
            #expect(try await store.push(id: "old-queued")?.state == .queued)
            // The key is forgotten: the same key is accepted again.
            #expect(
                try await store.accept(Ingest(idempotencyKey: "k1", message: nil, pushes: [], receipt: [])) == .accepted
            )
        }
    }

    @Test("a token belongs to one device")
    func tokenMoves() async throws {
        try await Self.withStore { store, _ in
            try await store.saveDevice(Self.device("d1", token: "aaaa1111"))
            try await store.saveDevice(Self.device("d2", user: "other", token: "aaaa1111"))
            #expect(try await store.device(id: "d1")?.messagingToken == nil)
            #expect(try await store.device(id: "d2")?.messagingToken == "aaaa1111")
            _ = try await store.updateTokens(deviceID: "d1", messaging: "aaaa1111", voip: nil, now: 5)
            #expect(try await store.device(id: "d2")?.messagingToken == nil)
            #expect(try await store.updateTokens(deviceID: "missing", messaging: "x", voip: nil, now: 5) == nil)
            #expect(try await store.deleteDevice(id: "d1"))
            #expect(try await store.deleteDevice(id: "d1") == false)
        }
    }
}
