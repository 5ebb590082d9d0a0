import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    static func callRecord(_ id: String, devices: [String], at time: Int64 = 1_000, ttl: Int64 = 30_000) -> CallRecord {
        CallRecord(
            id: id,
            appID: StoreFixtures.app().id,
            userID: "alice",
            media: "audio",
            sealedCaller: [1, 2, 3, 0, 255],
            createdAt: time,
            expiresAt: time + ttl,
            updatedAt: time,
            devices: devices.map { CallDeviceRecord(deviceID: $0, report: .pushed) }
        )
    }

    static func callEvent(_ id: String, _ type: WebhookEventType, call: String, at time: Int64) -> WebhookEvent {
        subjectEvent(id, type, subject: "call", call, at: time)
    }

    /// `device` reports `call` ringing at `time`, with `event` the `call.ringing` event that the
    /// call's first report writes.
    static func reportRinging(
        _ store: any HeraldStore,
        call: String,
        device: String,
        at time: Int64,
        event: String
    ) async throws -> CallRecord? {
        try await store.reportCallRinging(
            callID: call,
            deviceID: device,
            at: time,
            firstRinging: [callEvent(event, .callRinging, call: call, at: time)]
        )
    }

    /// A call is written with its ingest (its pushes, its key) and read back with its devices,
    /// from another store too; a repeated key writes neither a call nor a push.
    public static func callIsWrittenWithItsIngest(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let call = callRecord("call-1", devices: ["d2", "d1"])
        let ingest = Ingest(
            idempotencyKey: "call:call-1",
            message: nil,
            pushes: [
                StoreFixtures.push("p1", device: "d1", kind: .call, at: 1_000),
                StoreFixtures.push("p2", device: "d2", kind: .call, at: 1_000),
            ],
            receipt: [7, 7]
        )
        #expect(try await store.call(id: "call-1") == nil)
        #expect(try await store.acceptCall(ingest, call: call) == .accepted)
        let other = try await engine.open(storage)
        var expected = call
        expected.devices.sort { $0.deviceID < $1.deviceID }
        #expect(try await other.call(id: "call-1") == expected)
        #expect(try await other.push(id: "p1")?.kind == .call)

        var repeated = ingest
        repeated.pushes = [StoreFixtures.push("p3", device: "d3", kind: .call, at: 2_000)]
        let changed = callRecord("call-1", devices: ["d3"], at: 2_000)
        #expect(try await other.acceptCall(repeated, call: changed) == .duplicate(receipt: [7, 7]))
        #expect(try await store.call(id: "call-1") == expected)
        #expect(try await store.push(id: "p3") == nil)
    }

    /// Two devices answering at once: exactly one wins, with its report, its event and its
    /// stops; the other learns the call is answered and writes nothing. An ended call stays as it
    /// ended; an unknown call is said unknown.
    public static func callEndsOnce(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let other = try await engine.open(storage)
        let ingest = Ingest(idempotencyKey: "call:c", message: nil, pushes: [], receipt: [])
        _ = try await store.acceptCall(ingest, call: callRecord("c", devices: ["d1", "d2", "d3"]))

        func answer(_ device: String, on store: any HeraldStore) async throws -> CallEndOutcome {
            try await store.endCall(
                CallEnd(
                    callID: "c",
                    state: .answered,
                    deviceID: device,
                    at: 2_000,
                    events: [callEvent("evt-" + device, .callAnswered, call: "c", at: 2_000)],
                    stops: [
                        CallStop(callID: "c", deviceID: "d3", nodeID: "node-of-" + device, reason: .answeredElsewhere)
                    ]
                )
            )
        }
        async let first = answer("d1", on: store)
        async let second = answer("d2", on: other)
        let outcomes = try await [first, second]
        let winners = outcomes.compactMap { outcome -> CallRecord? in
            if case .ended(let call) = outcome { call } else { nil }
        }
        let losers = outcomes.compactMap { outcome -> CallRecord? in
            if case .alreadyEnded(let call) = outcome { call } else { nil }
        }
        try #require(winners.count == 1 && losers.count == 1)
        let winner = try #require(winners[0].deviceID)
        let loser = winner == "d1" ? "d2" : "d1"
        #expect(winners[0].state == .answered && winners[0].endedAt == 2_000)
        #expect(losers[0].state == .answered && losers[0].deviceID == winner)
        #expect(winners[0].devices.first { $0.deviceID == winner }?.report == .answered)
        #expect(winners[0].devices.first { $0.deviceID == loser }?.report == .pushed)
        #expect(try await store.webhookEvent(id: "evt-" + winner)?.event.type == .callAnswered)
        #expect(try await store.webhookEvent(id: "evt-" + loser) == nil)
        #expect(try await other.takeCallStops(nodeID: "node-of-" + loser).isEmpty)
        #expect(
            try await other.takeCallStops(nodeID: "node-of-" + winner) == [
                CallStop(callID: "c", deviceID: "d3", nodeID: "node-of-" + winner, reason: .answeredElsewhere)
            ]
        )

        let cancel = CallEnd(callID: "c", state: .cancelled, reason: "remote_ended", at: 3_000)
        #expect(try await store.endCall(cancel) == .alreadyEnded(try #require(try await store.call(id: "c"))))
        #expect(try await store.call(id: "c")?.state == .answered)
        var unknown = cancel
        unknown.callID = "nope"
        #expect(try await store.endCall(unknown) == .unknown)
    }

    /// The first device to report ringing writes `call.ringing`, the next writes no event; a
    /// device not pushed to is added; once the call ended a report changes nothing.
    public static func callRingingIsReportedOnce(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let ingest = Ingest(idempotencyKey: "call:r", message: nil, pushes: [], receipt: [])
        _ = try await store.acceptCall(ingest, call: callRecord("r", devices: ["d1", "d2"]))
        let other = try await engine.open(storage)
        #expect(try await store.reportCallRinging(callID: "nope", deviceID: "d1", at: 1, firstRinging: []) == nil)

        let first = try #require(try await reportRinging(store, call: "r", device: "d2", at: 1_100, event: "ring-1"))
        #expect(first.ringingAt == 1_100)
        #expect(
            first.devices == [
                .init(deviceID: "d1", report: .pushed), .init(deviceID: "d2", report: .ringing, reportedAt: 1_100),
            ]
        )
        let second = try #require(try await reportRinging(other, call: "r", device: "d9", at: 1_200, event: "ring-2"))
        #expect(second.ringingAt == 1_100)
        #expect(second.devices.map(\.deviceID) == ["d1", "d2", "d9"])
        #expect(try await store.webhookEvent(id: "ring-1") != nil)
        #expect(try await store.webhookEvent(id: "ring-2") == nil)

        _ = try await store.endCall(CallEnd(callID: "r", state: .declined, deviceID: "d1", at: 1_300))
        let after = try #require(
            try await store.reportCallRinging(callID: "r", deviceID: "d1", at: 1_400, firstRinging: [])
        )
        #expect(after.state == .declined && after.deviceID == "d1")
        #expect(after.devices.first?.report == .declined)
    }

    /// A ringing call past its time to live is claimed by one owner at a time, across stores,
    /// until its lease ends (a dead claimer's call comes back); a call ended is never claimed,
    /// and the missed end written with its alerts happens once.
    public static func dueCallsAreClaimedOnce(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let other = try await engine.open(storage)
        #expect(try await store.nextCallDue() == nil)
        for (id, ttl) in [("early", Int64(10_000)), ("late", 20_000), ("answered", 5_000)] {
            let ingest = Ingest(idempotencyKey: "call:" + id, message: nil, pushes: [], receipt: [])
            _ = try await store.acceptCall(ingest, call: callRecord(id, devices: ["d1"], ttl: ttl))
        }
        _ = try await store.endCall(CallEnd(callID: "answered", state: .answered, deviceID: "d1", at: 2_000))
        #expect(try await other.nextCallDue() == 11_000)
        #expect(try await store.claimDueCalls(now: 10_999, owner: "a", leaseUntil: 20_000, limit: 10).isEmpty)

        async let a = store.claimDueCalls(now: 30_000, owner: "a", leaseUntil: 40_000, limit: 10)
        async let b = other.claimDueCalls(now: 30_000, owner: "b", leaseUntil: 40_000, limit: 10)
        let claims = try await [a, b]
        #expect(claims.flatMap { $0.map(\.id) }.sorted() == ["early", "late"])
        #expect(try await other.claimDueCalls(now: 40_000, owner: "b", leaseUntil: 50_000, limit: 10).isEmpty)

        // Claimer "a" died: after its lease the calls come back, oldest first.
        let back = try await other.claimDueCalls(now: 40_001, owner: "b", leaseUntil: 50_000, limit: 1)
        #expect(back.map(\.id) == ["early"])
        let alert = StoreFixtures.push("missed-alert", device: "d1", kind: .missedCall, at: 40_001)
        let missed = CallEnd(
            callID: "early",
            state: .missed,
            reason: "unanswered",
            at: 40_001,
            events: [callEvent("missed-early", .callMissed, call: "early", at: 40_001)],
            pushes: [alert]
        )
        async let once = other.endCall(missed)
        async let twice = store.endCall(missed)
        let ends = try await [once, twice]
        #expect(ends.filter { if case .ended = $0 { true } else { false } }.count == 1)
        #expect(try await store.push(id: "missed-alert")?.kind == .missedCall)
        #expect(try await store.call(id: "early")?.state == .missed)
        #expect(try await store.nextCallDue() == 21_000)
        #expect(
            try await store.claimDueCalls(now: 60_000, owner: "c", leaseUntil: 70_000, limit: 10).map(\.id) == ["late"]
        )
    }

    /// Stops handed to a node are taken once, by that node only; retention removes the calls
    /// that ended before the history kept.
    public static func callStopsAreTakenOnce(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let other = try await engine.open(storage)
        let ingest = Ingest(idempotencyKey: "call:s", message: nil, pushes: [], receipt: [])
        _ = try await store.acceptCall(ingest, call: callRecord("s", devices: ["d1", "d2", "d3"]))
        let stops = [
            CallStop(callID: "s", deviceID: "d2", nodeID: "n2", reason: .remoteEnded),
            CallStop(callID: "s", deviceID: "d3", nodeID: "n3", reason: .remoteEnded),
        ]
        _ = try await store.endCall(
            CallEnd(callID: "s", state: .cancelled, reason: "remote_ended", at: 2_000, stops: stops)
        )
        #expect(try await other.takeCallStops(nodeID: "n1").isEmpty)
        async let first = other.takeCallStops(nodeID: "n2")
        async let second = store.takeCallStops(nodeID: "n2")
        let taken = try await [first, second]
        #expect(taken.flatMap { $0 } == [stops[0]])
        #expect(try await store.takeCallStops(nodeID: "n3") == [stops[1]])

        // Retention: a call ended before the history kept goes, with its devices; a ringing one
        // stays.
        let ringing = Ingest(idempotencyKey: "call:still", message: nil, pushes: [], receipt: [])
        _ = try await store.acceptCall(ringing, call: callRecord("still", devices: ["d1"]))
        _ = try await other.deleteExpired(now: 2_500, historyBefore: 2_000)
        #expect(try await store.call(id: "s") != nil)
        _ = try await other.deleteExpired(now: 2_500, historyBefore: 2_001)
        #expect(try await store.call(id: "s") == nil)
        #expect(try await store.call(id: "still")?.state == .ringing)
    }
}
