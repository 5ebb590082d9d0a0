import HeraldPush
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// What `accept` writes reads back the same, from another store on the same storage: every
    /// field of every push (APNs and FCM payloads, collapse ids, times), the message, and a
    /// history that starts with the acceptance. Unknown ids read back as nothing.
    public static func pushesRoundTrip(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        try await store.saveDevice(StoreFixtures.androidDevice("a1", token: "fcm-a1"))
        var alert = StoreFixtures.push("alert", device: "d1", at: 7, expires: 86_400_007)
        alert.collapseID = "conversation-1"
        alert.nextAttemptAt = 9
        alert.subjectID = "message-1"
        let call = StoreFixtures.push("call", device: "d1", kind: .call, at: 8, expires: 30_008)
        var fcm = StoreFixtures.fcmPush("fcm", device: "a1", kind: .call, at: 9)
        fcm.collapseID = "k"
        let message = StoreFixtures.message("message-1", at: 7, expires: 86_400_007)
        #expect(try await store.accept(StoreFixtures.ingest([alert, call, fcm], message: message)) == .accepted)

        let otherNode = try await engine.open(storage)
        for entry in [alert, call, fcm] {
            #expect(try await otherNode.push(id: entry.pushID) == entry)
            #expect(
                try await otherNode.deliveryLog(pushID: entry.pushID) == [
                    DeliveryEvent(pushID: entry.pushID, at: entry.createdAt, state: .queued, reason: nil)
                ]
            )
        }
        #expect(try await otherNode.message(id: "message-1") == message)
        #expect(try await otherNode.push(id: "unknown") == nil)
        #expect(try await otherNode.message(id: "unknown") == nil)
        #expect(try await otherNode.deliveryLog(pushID: "unknown") == [])
    }

    /// Dispatcher batches finished at the same moment (an engine may write them in one
    /// statement) each keep their own outcome, reason and time.
    public static func concurrentCompletionsKeepTheirOwn(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        let pushes = (0..<120).map { StoreFixtures.push("p\($0)", device: "d1", at: Int64($0)) }
        _ = try await store.accept(StoreFixtures.ingest(pushes))
        #expect(try await claimIDs(store, limit: 200, owner: "w", now: 200, leaseUntil: 10_000).count == 120)
        // 40 batches of three, each finished at its own time, all at once.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for batch in 0..<40 {
                group.addTask {
                    let completions = (0..<3).map { index in
                        let push = batch * 3 + index
                        return PushCompletion(
                            pushID: "p\(push)",
                            disposition: .finish(push.isMultiple(of: 2) ? .delivered : .failed),
                            reason: push.isMultiple(of: 2) ? nil : "BadDeviceToken (400) #\(push)",
                            deadToken: nil
                        )
                    }
                    try await store.complete(completions, now: 1_000 + Int64(batch))
                }
            }
            try await group.waitForAll()
        }
        for push in 0..<120 {
            let entry = try #require(try await store.push(id: "p\(push)"))
            #expect(entry.state == (push.isMultiple(of: 2) ? .delivered : .failed))
            #expect(entry.lastReason == (push.isMultiple(of: 2) ? nil : "BadDeviceToken (400) #\(push)"))
            #expect(entry.updatedAt == 1_000 + Int64(push / 3))
        }
    }

    /// Batches of outcomes recorded in one call (the dispatcher gathers its loops' finished
    /// batches) each keep their own time, whether all of them finish pushes or some put pushes
    /// back or clear a dead token.
    public static func batchesOfOutcomesKeepTheirTimes(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1", token: "tok-1"))
        let pushes = (0..<6).map { StoreFixtures.push("p\($0)", device: "d1", at: Int64($0)) }
        _ = try await store.accept(StoreFixtures.ingest(pushes))
        #expect(try await claimIDs(store, now: 10, leaseUntil: 100_000).count == 6)
        func finish(_ id: String, _ state: PushState, _ reason: String? = nil) -> PushCompletion {
            PushCompletion(pushID: id, disposition: .finish(state), reason: reason, deadToken: nil)
        }
        try await store.complete([
            CompletionBatch(
                completions: [finish("p0", .delivered), finish("p1", .failed, "BadTopic (400)")],
                now: 1_000
            ),
            CompletionBatch(completions: [finish("p2", .delivered)], now: 1_005),
        ])
        try await store.complete([
            CompletionBatch(
                completions: [
                    PushCompletion(pushID: "p3", disposition: .retry(at: 5_000), reason: "Throttled", deadToken: nil)
                ],
                now: 1_010
            ),
            CompletionBatch(
                completions: [
                    PushCompletion(
                        pushID: "p4",
                        disposition: .finish(.tokenDead),
                        reason: "Unregistered",
                        deadToken: ("d1", "tok-1")
                    ),
                    finish("p5", .expired, "expired while retrying"),
                ],
                now: 1_011
            ),
        ])

        let expected: [(String, PushState, String?, Int64)] = [
            ("p0", .delivered, nil, 1_000), ("p1", .failed, "BadTopic (400)", 1_000), ("p2", .delivered, nil, 1_005),
            ("p3", .queued, "Throttled", 1_010), ("p4", .tokenDead, "Unregistered", 1_011),
            ("p5", .expired, "expired while retrying", 1_011),
        ]
        for (id, state, reason, at) in expected {
            let entry = try #require(try await store.push(id: id))
            #expect(entry.state == state && entry.lastReason == reason && entry.updatedAt == at, "\(id)")
            #expect(try await store.deliveryLog(pushID: id).last?.at == at, "\(id)")
        }
        #expect(try await store.push(id: "p3")?.nextAttemptAt == 5_000)
        let device = try #require(try await store.device(id: "d1"))
        #expect(device.messagingToken == nil && device.tokenDeadReason == "Unregistered")
        #expect(try await store.releaseClaims(owner: "w", now: 2_000) == 0)
    }

    /// A completion finishes a push (delivered, failed, expired: with its reason and time, never
    /// claimed or released again) or puts it back in the queue for a given time, logged with the
    /// reason; a retried push is claimed again then, as its next attempt.
    public static func completionsFinishOrRetry(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        let pushes = ["a", "b", "c", "d"].enumerated().map {
            StoreFixtures.push($0.element, device: "d1", at: Int64($0.offset))
        }
        _ = try await store.accept(StoreFixtures.ingest(pushes))
        #expect(try await claimIDs(store, owner: "w", now: 10, leaseUntil: 1000) == ["a", "b", "c", "d"])
        try await store.complete(
            [
                PushCompletion(pushID: "a", disposition: .finish(.delivered), reason: nil, deadToken: nil),
                PushCompletion(pushID: "b", disposition: .retry(at: 100), reason: "TooManyRequests", deadToken: nil),
                PushCompletion(pushID: "c", disposition: .finish(.failed), reason: "BadTopic (400)", deadToken: nil),
                PushCompletion(
                    pushID: "d",
                    disposition: .finish(.expired),
                    reason: "expired while retrying: Throttled",
                    deadToken: nil
                ),
            ],
            now: 50
        )

        let a = try #require(try await store.push(id: "a"))
        #expect(a.state == .delivered && a.lastReason == nil && a.updatedAt == 50 && a.attempts == 1)
        #expect(
            try await store.deliveryLog(pushID: "a") == [
                DeliveryEvent(pushID: "a", at: 0, state: .queued, reason: nil),
                DeliveryEvent(pushID: "a", at: 50, state: .delivered, reason: nil),
            ]
        )
        let b = try #require(try await store.push(id: "b"))
        #expect(b.state == .queued && b.nextAttemptAt == 100 && b.lastReason == "TooManyRequests")
        #expect(b.attempts == 1 && b.updatedAt == 50)
        #expect(
            try await store.deliveryLog(pushID: "b") == [
                DeliveryEvent(pushID: "b", at: 1, state: .queued, reason: nil),
                DeliveryEvent(pushID: "b", at: 50, state: .queued, reason: "TooManyRequests"),
            ]
        )
        let c = try #require(try await store.push(id: "c"))
        #expect(c.state == .failed && c.lastReason == "BadTopic (400)")
        #expect(
            try await store.deliveryLog(pushID: "c").last
                == DeliveryEvent(pushID: "c", at: 50, state: .failed, reason: "BadTopic (400)")
        )
        let d = try #require(try await store.push(id: "d"))
        #expect(d.state == .expired && d.lastReason == "expired while retrying: Throttled")

        // Finished pushes are never claimed or released again; the retried one waits for its time.
        #expect(try await store.releaseClaims(owner: "w", now: 60) == 0)
        #expect(try await store.nextDueTime() == 100)
        #expect(try await claimIDs(store, now: 99) == [])
        let retried = try await store.claim(limit: 10, owner: "w", now: 100, leaseUntil: 1000)
        #expect(retried.map(\.entry.pushID) == ["b"])
        #expect(retried.first?.entry.attempts == 2)
        try await store.complete(
            [PushCompletion(pushID: "b", disposition: .finish(.delivered), reason: nil, deadToken: nil)],
            now: 120
        )
        #expect(try await store.deliveryLog(pushID: "b").map(\.state) == [.queued, .queued, .delivered])
        #expect(try await claimIDs(store, now: 10_000) == [])
        let counts = try await store.outboxCounts()
        #expect(counts[.delivered] == 2 && counts[.failed] == 1 && counts[.expired] == 1)
        #expect(counts[.queued] == 0 && counts[.sending] == 0)
    }

    /// A dead token is cleared from its device, messaging or VoIP, with the reason, only if the
    /// device still has it: a new token that arrived while the push to the old one was in flight
    /// stays, and so does the token of a device that took it over. Later pushes to a device whose
    /// token died are skipped with the reason.
    public static func deadTokensClearedOnlyWhereStillHeld(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1", token: "tok-1", voip: "voip-1"))
        try await store.saveDevice(StoreFixtures.device("d2", token: "tok-2", voip: "voip-2"))
        try await store.saveDevice(StoreFixtures.device("d3", token: "old-3"))
        try await store.saveDevice(StoreFixtures.device("d4", token: "moving"))
        let pushes = [
            StoreFixtures.push("m1", device: "d1", at: 1),
            StoreFixtures.push("c2", device: "d2", kind: .call, at: 2),
            StoreFixtures.push("m3", device: "d3", at: 3),
            StoreFixtures.push("m4", device: "d4", at: 4),
        ]
        _ = try await store.accept(StoreFixtures.ingest(pushes))
        let claimed = try await store.claim(limit: 10, owner: "w", now: 10, leaseUntil: 1000)
        #expect(
            claimed.map { [$0.entry.pushID, $0.deviceToken] } == [
                ["c2", "voip-2"], ["m1", "tok-1"], ["m3", "old-3"], ["m4", "moving"],
            ]
        )

        // While the pushes are in flight, d3 gets a new token and d4's token moves to d5.
        _ = try await store.updateTokens(deviceID: "d3", messaging: "new-3", voip: nil, now: 20)
        try await store.saveDevice(StoreFixtures.device("d5", token: "moving"))
        try await store.complete(
            claimed.map {
                PushCompletion(
                    pushID: $0.entry.pushID,
                    disposition: .finish(.tokenDead),
                    reason: "Unregistered",
                    deadToken: ($0.entry.deviceID, $0.deviceToken)
                )
            },
            now: 30
        )

        for push in pushes {
            let entry = try #require(try await store.push(id: push.pushID))
            #expect(entry.state == .tokenDead && entry.lastReason == "Unregistered", "\(push.pushID)")
            #expect(try await store.deliveryLog(pushID: push.pushID).map(\.state) == [.queued, .tokenDead])
        }
        let d1 = try #require(try await store.device(id: "d1"))
        #expect(d1.messagingToken == nil && d1.voipToken == "voip-1" && d1.tokenDeadReason == "Unregistered")
        let d2 = try #require(try await store.device(id: "d2"))
        #expect(d2.voipToken == nil && d2.messagingToken == "tok-2" && d2.tokenDeadReason == "Unregistered")
        let d3 = try #require(try await store.device(id: "d3"))
        #expect(d3.messagingToken == "new-3" && d3.tokenDeadReason == nil)
        let d4 = try #require(try await store.device(id: "d4"))
        #expect(d4.messagingToken == nil && d4.tokenDeadReason == nil)
        #expect(try await store.device(id: "d5")?.messagingToken == "moving")

        _ = try await store.accept(StoreFixtures.ingest([StoreFixtures.push("m1-later", device: "d1", at: 40)]))
        #expect(try await claimIDs(store, now: 50) == [])
        let later = try #require(try await store.push(id: "m1-later"))
        #expect(later.state == .skipped && later.lastReason == "token_dead: Unregistered")
    }
}

extension StoreConformance {
    /// Outcomes written late, after the push's lease ended and another owner took it (a node
    /// that kept its outcomes through a database outage longer than the lease): a final outcome
    /// is written whatever holds the push (it is what the network said about a send that
    /// happened: `delivered` replaces an `expired before sending`), but a push goes back to the
    /// queue only while it is still claimed, so a late retry never undoes another owner's end,
    /// nor is logged.
    public static func lateOutcomesAfterALapsedLease(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        try await store.saveDevice(StoreFixtures.device("d1"))
        let pushes = [
            StoreFixtures.push("retried", device: "d1", at: 1),
            StoreFixtures.push("accepted", device: "d1", at: 2, expires: 30_000),
        ]
        _ = try await store.accept(StoreFixtures.ingest(pushes))
        #expect(try await claimIDs(store, owner: "a", now: 10, leaseUntil: 60_010) == ["retried", "accepted"])
        // A's lease ends: B claims "retried" and delivers it; "accepted" expired meanwhile, and
        // B's claim finishes it unsent.
        #expect(try await claimIDs(store, owner: "b", now: 60_020, leaseUntil: 120_020) == ["retried"])
        #expect(try await store.push(id: "accepted")?.state == .expired)
        try await store.complete(
            [PushCompletion(pushID: "retried", disposition: .finish(.delivered), reason: nil, deadToken: nil)],
            now: 60_030
        )
        // A's outcomes, learned before the lease ended, reach the store now.
        try await store.complete(
            [
                PushCompletion(pushID: "retried", disposition: .retry(at: 70_000), reason: "Throttled", deadToken: nil),
                PushCompletion(pushID: "accepted", disposition: .finish(.delivered), reason: nil, deadToken: nil),
            ],
            now: 60_040
        )
        let retried = try #require(try await store.push(id: "retried"))
        #expect(retried.state == .delivered && retried.lastReason == nil)
        #expect(try await store.deliveryLog(pushID: "retried").map(\.state) == [.queued, .delivered])
        #expect(try await store.push(id: "accepted")?.state == .delivered)
        #expect(try await claimIDs(store, owner: "c", now: 200_000) == [])
        // A requeue (the network unreachable) of a finished push is ignored the same way, in a
        // write that also records other outcomes.
        try await store.complete(
            [
                CompletionBatch(
                    completions: [
                        PushCompletion(
                            pushID: "retried",
                            disposition: .requeue(at: 60_050),
                            reason: "down",
                            deadToken: nil
                        )
                    ],
                    now: 60_050
                ),
                CompletionBatch(
                    completions: [
                        PushCompletion(
                            pushID: "accepted",
                            disposition: .finish(.delivered),
                            reason: nil,
                            deadToken: nil
                        )
                    ],
                    now: 60_060
                ),
            ]
        )
        #expect(try await store.push(id: "retried")?.state == .delivered)
        #expect(try await store.push(id: "retried")?.attempts == retried.attempts)
        #expect(try await claimIDs(store, owner: "c", now: 200_000) == [])
    }
}
