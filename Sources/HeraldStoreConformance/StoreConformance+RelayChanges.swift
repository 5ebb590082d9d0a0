import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// The relay's writes through `apply`, several in one batch: an ingest is `applied` once and
    /// `duplicate` for its key again (also within the batch), the receipt readable by key; a
    /// call's end or ringing report on an unknown call, a callback change at a moved version, an
    /// unknown chat's end, a disconnect or live session that is not there answer `stale`; an ended
    /// chat ends again as `duplicate`; a handover, a held message or a webhook claim that is not
    /// there is `stale`. A failing change undoes the ingests of its batch, keys
    /// included.
    public static func relayChangesAnswerInOneBatch(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1", createdAt: 1))
        let other = try await engine.open(storage)
        try await relayChangesOfOneBatch(store, other)
        try await endsAnswerOnceThenStaleOrDuplicate(store, other)
        try await aFailingRelayChangeUndoesItsBatch(store, other)
    }

    /// Every relay change in one batch, each answered; what was written is read by another store.
    private static func relayChangesOfOneBatch(_ store: any HeraldStore, _ other: any HeraldStore) async throws {
        let message = StoreFixtures.ingest(
            [StoreFixtures.push("p1", device: "d1", kind: .message, at: 10)],
            key: "k1",
            message: StoreFixtures.message("m1", expires: 10_000),
            receipt: [1, 1]
        )
        var twin = message
        twin.pushes = [StoreFixtures.push("p2", device: "d1", kind: .message, at: 11)]
        twin.receipt = [2, 2]
        let callIngest = StoreFixtures.ingest(
            [StoreFixtures.push("p3", device: "d1", kind: .call, at: 12)],
            key: "call:c1",
            receipt: [3]
        )
        let scheduled = CallbackHistoryEntry(at: 0, event: .scheduled, state: .scheduled, nextPushAt: 1_000)
        let moved = CallbackChange(
            callbackID: "cb1",
            expectedVersion: 7,
            state: .cancelled,
            dueAt: 1_000,
            history: [],
            now: 20
        )
        let outcomes = try await store.apply([
            .accept(message),
            .accept(twin),
            .acceptCall(callIngest, call: callRecord("c1", devices: ["d1"])),
            .endCall(CallEnd(callID: "ghost", state: .cancelled, at: 13)),
            .reportCallRinging(CallRinging(callID: "ghost", deviceID: "d1", at: 13, firstRinging: [])),
            .scheduleCallback(callbackRecord("cb1", due: 1_000), history: scheduled, idempotencyKey: "cbk"),
            .scheduleCallback(callbackRecord("cb2", due: 1_000), history: scheduled, idempotencyKey: "cbk"),
            .changeCallback(moved),
            .endChat(conversation: "nobody", at: 14),
            .markDisconnectPushed(deviceID: "d1", conversation: "nobody"),
            .saveLiveSession(
                LiveSessionRecord(deviceID: "d1", nodeID: "n1", sessionID: "s1", conversation: nil, expiresAt: 99)
            ),
            .removeLiveSession(deviceID: "d1", sessionID: "s0"),
            .renewLiveSessions(nodeID: "n1", keeping: ["s1"], until: 200),
            .settleLiveHandover(messageID: "m1", deviceID: "d1"),
            .releaseHeld(HeldRelease(messageID: "m1", pushes: []), now: 20),
            .completeWebhookEvent(id: "nothing", owner: "o", .delivered, now: 20),
        ])
        #expect(
            outcomes == [
                .applied, .duplicate, .applied, .stale, .stale, .applied, .duplicate, .stale, .stale, .stale, .applied,
                .stale, .applied, .stale, .stale, .stale,
            ]
        )

        #expect(try await other.receipt(idempotencyKey: "k1") == [1, 1], "the first ingest's receipt")
        #expect(try await other.receipt(idempotencyKey: "unused") == nil)
        #expect(try await other.push(id: "p1") != nil)
        #expect(try await other.push(id: "p2") == nil)
        #expect(try await other.call(id: "c1")?.state == .ringing)
        #expect(try await other.callback(idempotencyKey: "cbk")?.id == "cb1")
        #expect(try await other.callback(id: "cb2") == nil)
        #expect(try await other.liveSessions(deviceIDs: ["d1"], now: 150).map(\.sessionID) == ["s1"], "renewed")
    }

    /// The call's end and a chat's: once `applied`, then `stale` and `duplicate`; the first end
    /// stays.
    private static func endsAnswerOnceThenStaleOrDuplicate(
        _ store: any HeraldStore,
        _ other: any HeraldStore
    ) async throws {
        _ = try await store.appendTranscript(
            TranscriptEvent(
                conversation: "conv",
                userID: "u",
                type: "Message.Text",
                sealedAuthor: [0xA1],
                fromAgent: true,
                sealedText: [1],
                at: 15
            )
        )
        let ends = try await store.apply([
            .endCall(CallEnd(callID: "c1", state: .cancelled, at: 16)),
            .endCall(CallEnd(callID: "c1", state: .missed, at: 17)),
            .endChat(conversation: "conv", at: 18),
            .endChat(conversation: "conv", at: 19),
        ])
        #expect(ends == [.applied, .stale, .applied, .duplicate])
        #expect(try await other.call(id: "c1")?.state == .cancelled, "the first end stays")
        #expect(try await other.chat(conversation: "conv")?.endedAt == 18, "the first end stays")
    }

    /// A disconnect for a device that is not there breaks a reference: the batch fails whole,
    /// its ingest and key included.
    private static func aFailingRelayChangeUndoesItsBatch(
        _ store: any HeraldStore,
        _ other: any HeraldStore
    ) async throws {
        let undone = StoreFixtures.ingest(
            [StoreFixtures.push("p9", device: "d1", kind: .message, at: 20)],
            key: "k9",
            receipt: [9]
        )
        await #expect(throws: (any Error).self) {
            try await store.apply([
                .accept(undone),
                .saveDisconnect(
                    ChatDisconnect(deviceID: "gone", conversation: "conv", position: 1, at: 21, pushed: false),
                    events: []
                ),
            ])
        }
        #expect(try await other.receipt(idempotencyKey: "k9") == nil, "the failed batch's ingest is undone")
        #expect(try await other.push(id: "p9") == nil)
    }
}
