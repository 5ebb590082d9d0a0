import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    static func callbackRecord(_ id: String, due: Int64, expires: Int64 = 100_000) -> CallbackRecord {
        CallbackRecord(
            id: id,
            appID: StoreFixtures.appID,
            userID: "u",
            state: .scheduled,
            sealedDialog: [9, 8, 7],
            dueAt: due,
            expiresAt: expires,
            createdAt: 0,
            updatedAt: 0
        )
    }

    static func callbackEvent(_ id: String, _ type: WebhookEventType, callback: String, at time: Int64) -> WebhookEvent
    {
        subjectEvent(id, type, subject: "callback", callback, at: time)
    }

    /// A scheduled callback is durable with its first history line (another store reads it), once
    /// per idempotency key; only due callbacks are claimed, each by one owner while its lease
    /// lasts, and again once the lease has lapsed; the claim moves the version, so a change made
    /// under a lost claim is refused; a change writes its state, history, pushes and events
    /// together, and is not claimed again once pushed unless it expires.
    public static func callbacksAreClaimedOnceAndPushedOnce(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        let scheduled = CallbackHistoryEntry(at: 0, event: .scheduled, state: .scheduled, nextPushAt: 1_000)
        let first = try await store.scheduleCallback(
            callbackRecord("cb1", due: 1_000),
            history: scheduled,
            idempotencyKey: "k1"
        )
        #expect(first.id == "cb1")
        let repeated = try await store.scheduleCallback(
            callbackRecord("cb1-again", due: 5),
            history: scheduled,
            idempotencyKey: "k1"
        )
        #expect(repeated == first)
        #expect(try await store.callback(id: "cb1-again") == nil)
        _ = try await store.scheduleCallback(
            callbackRecord("cb2", due: 50_000),
            history: scheduled,
            idempotencyKey: nil
        )

        let other = try await engine.open(storage)
        #expect(try await other.callback(id: "cb1") == first)
        #expect(try await other.callbackHistory(id: "cb1") == [scheduled])
        #expect(try await other.nextCallbackDueTime() == 1_000)
        let (claimed, restarted) = try await claimCallbackOnceAtATime(store, other, scheduledVersion: first.version)
        try await pushCallbackUnderItsClaim(
            store,
            other,
            staleVersion: claimed.version,
            currentVersion: restarted.version,
            scheduled: scheduled
        )
    }

    /// cb1, due at 1 000, is claimed by one of two nodes at once, held while the lease lasts,
    /// claimed again once it lapsed and at once by its owner's next run, the version moved by each
    /// claim. Answers the first claim and the last.
    private static func claimCallbackOnceAtATime(
        _ store: any HeraldStore,
        _ other: any HeraldStore,
        scheduledVersion: Int
    ) async throws -> (first: CallbackRecord, last: CallbackRecord) {
        // Not due yet: nothing to claim.
        #expect(try await store.claimDueCallbacks(limit: 10, owner: "A", now: 999, leaseUntil: 5_000).isEmpty)
        // Two nodes at once: one gets it.
        async let a = store.claimDueCallbacks(limit: 10, owner: "A", now: 1_000, leaseUntil: 5_000)
        async let b = other.claimDueCallbacks(limit: 10, owner: "B", now: 1_000, leaseUntil: 5_000)
        let claims = try await [a, b]
        #expect(claims.map(\.count).sorted() == [0, 1])
        let claimed = try #require(claims.flatMap { $0 }.first)
        #expect(claimed.id == "cb1" && claimed.version == scheduledVersion + 1)
        // Held while the lease lasts; claimed again after it lapsed, with the version moved again.
        #expect(try await store.claimDueCallbacks(limit: 10, owner: "C", now: 4_999, leaseUntil: 9_000).isEmpty)
        let reclaimed = try await other.claimDueCallbacks(limit: 10, owner: "C", now: 5_001, leaseUntil: 9_000)
        #expect(reclaimed.map(\.id) == ["cb1"])
        #expect(reclaimed.first?.version == claimed.version + 1)
        // Its owner's next run (a restart) takes it back at once, lease or not.
        let restarted = try await store.claimDueCallbacks(limit: 10, owner: "C", now: 5_001, leaseUntil: 9_000)
        #expect(restarted.map(\.id) == ["cb1"])
        #expect(restarted.first?.version == claimed.version + 2)
        #expect(try await store.claimDueCallbacks(limit: 10, owner: "D", now: 5_001, leaseUntil: 9_000).isEmpty)
        return (claimed, try #require(restarted.first))
    }

    /// A change under a lost claim (`staleVersion`) is refused, writing nothing; the current
    /// claimer's change writes state, history, the push and its event together, and the callback
    /// is not claimed again until it expires.
    private static func pushCallbackUnderItsClaim(
        _ store: any HeraldStore,
        _ other: any HeraldStore,
        staleVersion: Int,
        currentVersion: Int,
        scheduled: CallbackHistoryEntry
    ) async throws {
        // The first claimer's change comes too late: refused, nothing written.
        let push = StoreFixtures.push("p-cb1", device: "d1", kind: .callback, at: 5_001, expires: 100_000)
        let pushed = CallbackHistoryEntry(at: 5_001, event: .pushed, state: .pushed, sequence: 1)
        let late = CallbackChange(
            callbackID: "cb1",
            expectedVersion: staleVersion,
            state: .pushed,
            dueAt: 1_000,
            pushed: 1,
            history: [pushed],
            pushes: [push],
            events: [callbackEvent("e-late", .callbackPushed, callback: "cb1", at: 5_001)],
            now: 5_001
        )
        #expect(try await store.changeCallback(late) == false)
        #expect(try await store.push(id: "p-cb1") == nil)
        #expect(try await store.webhookEvent(id: "e-late") == nil)

        // The current claimer's change: state, history, the push and its event, together.
        var current = late
        current.expectedVersion = currentVersion
        current.events = [callbackEvent("e-pushed", .callbackPushed, callback: "cb1", at: 5_001)]
        #expect(try await other.changeCallback(current))
        let after = try #require(try await store.callback(id: "cb1"))
        #expect(after.state == .pushed && after.pushes == 1 && after.version == current.expectedVersion + 1)
        #expect(try await store.callbackHistory(id: "cb1") == [scheduled, pushed])
        #expect(try await store.push(id: "p-cb1")?.kind == .callback)
        #expect(try await store.webhookEvent(id: "e-pushed")?.event.orderingKey == "callback:cb1")
        #expect(try await other.callbackWebhookEvents(callbackID: "cb1").map(\.event.id) == ["e-pushed"])
        #expect(try await other.callbackWebhookEvents(callbackID: "cb2").isEmpty)
        // The push is claimed by the dispatcher with the messaging token.
        let sent = try await store.claim(limit: 10, owner: "D", now: 5_002, leaseUntil: 9_000)
        #expect(sent.map(\.deviceToken) == ["aad1"])

        // Pushed and waiting: not claimed again (the lease was released, it is not due) …
        #expect(try await store.claimDueCallbacks(limit: 10, owner: "E", now: 6_000, leaseUntil: 9_000).isEmpty)
        #expect(try await store.nextCallbackDueTime() == 50_000)
        // … until it expires unanswered.
        let expiring = try await store.claimDueCallbacks(limit: 10, owner: "E", now: 100_000, leaseUntil: 109_000)
        #expect(Set(expiring.map(\.id)) == ["cb1", "cb2"])
    }

    /// Two answers at once with the version both read: one wins, the other writes nothing; a
    /// snooze schedules the next push, which is claimed when due.
    public static func callbackAnswersCompareAndSet(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let other = try await engine.open(storage)
        _ = try await store.scheduleCallback(
            callbackRecord("cb", due: 0),
            history: CallbackHistoryEntry(at: 0, event: .scheduled, state: .scheduled, nextPushAt: 0),
            idempotencyKey: nil
        )
        let claimed = try #require(
            try await store.claimDueCallbacks(limit: 1, owner: "A", now: 0, leaseUntil: 100).first
        )
        #expect(
            try await store.changeCallback(
                CallbackChange(
                    callbackID: "cb",
                    expectedVersion: claimed.version,
                    state: .pushed,
                    dueAt: 0,
                    pushed: 1,
                    history: [CallbackHistoryEntry(at: 0, event: .pushed, state: .pushed, sequence: 1)],
                    now: 0
                )
            )
        )
        let waiting = try #require(try await store.callback(id: "cb"))
        func answer(_ action: String, _ state: CallbackState, due: Int64, event: String) -> CallbackChange {
            CallbackChange(
                callbackID: "cb",
                expectedVersion: waiting.version,
                state: state,
                dueAt: due,
                lastAction: action,
                history: [CallbackHistoryEntry(at: 10, event: .action, state: state, action: action, nextPushAt: due)],
                events: [callbackEvent(event, .callbackAction, callback: "cb", at: 10)],
                now: 10
            )
        }
        async let snooze = store.changeCallback(answer("snooze", .scheduled, due: 310, event: "e-snooze"))
        async let cancel = other.changeCallback(answer("cancel", .cancelled, due: 0, event: "e-cancel"))
        let results = try await [snooze, cancel]
        #expect(results.filter { $0 }.count == 1)
        let final = try #require(try await store.callback(id: "cb"))
        let history = try await store.callbackHistory(id: "cb")
        #expect(history.count == 3)
        if results[0] {
            #expect(final.state == .scheduled && final.dueAt == 310 && final.lastAction == "snooze")
            #expect(try await store.webhookEvent(id: "e-cancel") == nil)
            #expect(try await store.webhookEvent(id: "e-snooze") != nil)
            #expect(try await store.claimDueCallbacks(limit: 1, owner: "A", now: 309, leaseUntil: 900).isEmpty)
            #expect(
                try await store.claimDueCallbacks(limit: 1, owner: "A", now: 310, leaseUntil: 900).map(\.id) == ["cb"]
            )
        } else {
            #expect(final.state == .cancelled && final.lastAction == "cancel")
            #expect(try await store.webhookEvent(id: "e-snooze") == nil)
            #expect(try await store.claimDueCallbacks(limit: 1, owner: "A", now: 100_000, leaseUntil: 900).isEmpty)
        }
        #expect(history.last?.action == final.lastAction)

        // Retention: a finished callback older than the cut is deleted with its history; a
        // waiting one is kept whatever its age.
        let finished = final.state == .cancelled
        #expect(try await store.deleteFinishedCallbacks(before: 10) == 0)
        #expect(try await other.deleteFinishedCallbacks(before: 11) == (finished ? 1 : 0))
        #expect((try await store.callback(id: "cb") == nil) == finished)
        #expect(try await store.callbackHistory(id: "cb").isEmpty == finished)
    }
}
