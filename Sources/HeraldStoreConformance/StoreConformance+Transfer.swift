import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// `StoreImport`: another store's records, handed over as types, are written so that the
    /// store's own API reads them back as they were (pending pushes queued and unclaimed) and the
    /// relay carries on (claims, repeated keys, transcript positions); a store holding data is
    /// refused; a source that fails half-way, or hands over other than it tallied, leaves nothing.
    public static func importsAnotherStoresRecords(_ engine: some StoreEngine) async throws {
        let store = try await engine.makeStore()
        let target = try #require(store as? any StoreImport, "the engine's store does not take imports")
        let records = transferRecords()
        let source = RecordsExport(records: records)
        let expected = try await source.exportTally()
        #expect(expected.total == records.count)

        // A source lost half-way, and one that says more than it hands over: nothing is written.
        await #expect(throws: (any Error).self) {
            try await target.importAll(from: RecordsExport(records: records, failAfter: 2), batchSize: 2)
        }
        let overstated = RecordsExport(records: records, extraDevices: 1)
        await #expect(throws: StoreError.conflict) { try await target.importAll(from: overstated, batchSize: 3) }
        #expect(try await target.importTally() == StoreTally())
        #expect(try await store.device(id: "x1") == nil)

        #expect(try await target.importAll(from: source, batchSize: 3) == expected)
        #expect(try await target.importTally() == expected)
        await #expect(throws: StoreError.conflict) { try await target.importAll(from: source, batchSize: 3) }
        #expect(try await target.importTally() == expected)

        for record in records {
            switch record {
            case .app(let app): #expect(try await store.app(id: app.id) == app)
            case .device(let device): #expect(try await store.device(id: device.id) == device)
            case .message(let message): #expect(try await store.message(id: message.id) == message)
            case .push(let pending):
                var entry = pending.entry
                entry.state = .queued
                #expect(try await store.push(id: entry.pushID) == entry)
            case .chat(let chat): #expect(try await store.chat(conversation: chat.conversation) == chat)
            case .presence, .idempotencyKey, .transcriptEvent, .disconnect, .callback, .call, .webhookEvent, .apiKey,
                .auditEntry, .heldMessage, .operatorAccount:
                break
            }
        }
        let recipients = try await store.recipients(userID: "xu1")
        #expect(recipients.map(\.device.id) == ["x1"])
        #expect(recipients.first?.presence == transferPresence)
        #expect(
            try await store.deliveryLog(pushID: "x-retried").map(\.state) == [.queued, .queued],
            "the acceptance and the return to the queue"
        )
        let events = records.compactMap { record -> TranscriptEvent? in
            if case .transcriptEvent(let event) = record { return event }
            return nil
        }
        #expect(try await store.transcript(conversation: "x-chat", after: 0) == events)
        #expect(try await store.pendingDisconnects() == [transferDisconnect])
        // Positions go on where the source's stopped; the key answers the first receipt.
        let next = TranscriptEvent(
            conversation: "x-chat",
            userID: "xu1",
            type: "Message.Text",
            sealedAuthor: [1],
            fromAgent: true,
            sealedText: [2],
            at: 5_000
        )
        #expect(try await store.appendTranscript(next) == 3)
        let repeated = StoreFixtures.ingest(
            [StoreFixtures.push("x-new", device: "x1", at: 5_000)],
            key: "x-key",
            receipt: [0]
        )
        #expect(try await store.accept(repeated) == .duplicate(receipt: [7, 7, 7]))
        // A dispatcher takes every pending push, the call first, each to its device's token.
        let claimed = try await store.claim(limit: 10, owner: "new", now: 5_000, leaseUntil: 65_000)
        #expect(claimed.first?.entry.pushID == "x-call")
        #expect(Set(claimed.map(\.entry.pushID)) == ["x-call", "x-claimed", "x-retried", "x-fcm"])
        #expect(claimed.first { $0.entry.pushID == "x-call" }?.deviceToken == "bbx1")
        #expect(claimed.first { $0.entry.pushID == "x-fcm" }?.deviceToken == "fcm-x2")
    }

    static let transferPresence = PresenceRecord(
        deviceID: "x1",
        userID: "xu1",
        conversation: "x-chat",
        state: .background,
        updatedAt: 1_000,
        expiresAt: 61_000
    )

    static let transferDisconnect = ChatDisconnect(deviceID: "x1", conversation: "x-chat", position: 2, at: 1_500)

    /// One record of every kind, or several, as an export hands them over.
    static func transferRecords() -> [StoreRecord] {
        var claimed = StoreFixtures.push("x-claimed", device: "x1", at: 1_000, expires: 100_000)
        claimed.state = .sending
        claimed.attempts = 1
        var retried = StoreFixtures.push("x-retried", device: "x1", at: 1_001, expires: 100_000)
        retried.attempts = 1
        retried.lastReason = "InternalServerError"
        retried.nextAttemptAt = 2_000
        // A customer_wait app's push (its customer's wait) and a now-or-never one move as they are.
        retried.waitingSince = 900
        claimed.nowOrNever = true
        // A push made while tracing was on keeps its trace context on the way (docs/tracing.md).
        retried.traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        var app = StoreFixtures.app()
        app.queueOrder = .customerWait
        var device = StoreFixtures.device("x1", user: "xu1", createdAt: 1_000)
        device.sealedRelaySecretKey = [UInt8](repeating: 3, count: 48)
        device.credentialHash = [UInt8](repeating: 5, count: 32)
        var denied = StoreFixtures.device("x3", user: "xu3", createdAt: 1_010)
        denied.notificationPermission = .denied
        denied.notificationPermissionAt = 1_050
        var message = StoreFixtures.message("x-message", user: "xu1", at: 1_000, expires: 90_000)
        message.sealedPushOptions = [UInt8](repeating: 8, count: 50)
        let events = (1...2).map { position in
            TranscriptEvent(
                conversation: "x-chat",
                position: position,
                userID: "xu1",
                type: "Message.Text",
                sealedAuthor: [UInt8](repeating: UInt8(position), count: 40),
                fromAgent: position == 1,
                sealedText: [UInt8](repeating: 9, count: 30),
                at: 1_000 + Int64(position)
            )
        }
        return [
            .app(app),
            .device(device),
            .device(StoreFixtures.androidDevice("x2", user: "xu2", token: "fcm-x2")),
            .device(denied),
            .presence(transferPresence),
            .message(message),
            .idempotencyKey(IdempotencyRecord(key: "x-key", receipt: [7, 7, 7], createdAt: 1_000)),
            .push(PendingPush(entry: StoreFixtures.push("x-call", device: "x1", kind: .call, at: 1_002), requeues: [])),
            .push(PendingPush(entry: claimed, requeues: [])),
            .push(
                PendingPush(
                    entry: retried,
                    requeues: [
                        DeliveryEvent(pushID: "x-retried", at: 1_100, state: .queued, reason: "InternalServerError")
                    ]
                )
            ),
            .push(
                PendingPush(
                    entry: StoreFixtures.fcmPush("x-fcm", device: "x2", at: 1_003, expires: 100_000),
                    requeues: []
                )
            ),
            .chat(ChatRecord(conversation: "x-chat", userID: "xu1", startedAt: 1_001, lastEventAt: 1_002)),
        ] + events.map(StoreRecord.transcriptEvent) + [.disconnect(transferDisconnect)]
    }
}

/// Records held in memory, handed over as an export would: grouped by kind, in batches.
struct RecordsExport: StoreExport {
    let records: [StoreRecord]
    /// Fails after handing over this many batches.
    var failAfter: Int?
    /// Devices tallied but never handed over.
    var extraDevices = 0

    struct Lost: Error {}

    func exportTally() async throws -> StoreTally {
        var tally = StoreTally()
        tally.add(records)
        tally[.devices] += extraDevices
        return tally
    }

    func export(batchSize: Int, into sink: @Sendable ([StoreRecord]) async throws -> Void) async throws {
        var handed = 0
        for kind in StoreRecordKind.allCases {
            let ofKind = records.filter { $0.kind == kind }
            var start = 0
            while start < ofKind.count {
                if let failAfter, handed >= failAfter { throw Lost() }
                let end = min(start + max(1, batchSize), ofKind.count)
                try await sink(Array(ofKind[start..<end]))
                handed += 1
                start = end
            }
        }
    }
}
