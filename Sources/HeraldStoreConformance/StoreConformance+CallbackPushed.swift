import Foundation
import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// A callback's `callback.pushed` is written when one of its push's deliveries is recorded,
    /// not when the push is queued: once per push number (two devices delivered in one batch, a
    /// third later, write one), with the push's devices counted; a failed push writes none; an
    /// answer recorded before any delivery writes it ahead of its own event, and the delivery
    /// then writes none; a callback that expired first, a push queued before the subject named
    /// its number, and an app without a webhook get none.
    public static func callbackPushedWhenDelivered(_ engine: some StoreEngine) async throws {
        let (store, _) = try await fresh(engine)
        let hooked = try await saveHookedApp(store, devices: ["h1", "h2", "h3"])
        let scene = CallbackPushedScene(store: store, hookedAppID: hooked)
        // The steps share one store and one clock: each runs after the one before it.
        let waiting = try await pushedOncePerDelivery(scene)
        try await pushedEventsAroundAnswers(scene, waiting: waiting)
        try await noPushedAfterExpiry(scene)
        try await noPushedWithoutNumberOrWebhook(scene)
    }

    /// Queued to three devices: nothing yet. One fails, two are delivered in one batch: one
    /// event, with the push's devices counted. Answers the callback as its push left it.
    private static func pushedOncePerDelivery(_ scene: CallbackPushedScene) async throws -> CallbackRecord {
        let store = scene.store
        try await scene.schedule("cb1")
        let waiting = try await scene.push("cb1", 1, to: ["h1", "h2", "h3"], at: 10)
        #expect(try await scene.events("cb1").isEmpty)
        #expect(try await claimIDs(store, now: 20).count == 3)
        try await store.complete(
            [PushCompletion(pushID: "cb1-1-h1", disposition: .finish(.failed), reason: "BadTopic", deadToken: nil)],
            now: 25
        )
        #expect(try await scene.events("cb1").isEmpty)
        try await store.complete([delivered("cb1-1-h2"), delivered("cb1-1-h3")], now: 30)
        let first = try await scene.events("cb1")
        #expect(first.map(\.event.id) == [CallbackPushSubject.pushedEventID(callbackID: "cb1", push: 1)])
        let event = try #require(first.first).event
        #expect(event.type == .callbackPushed && event.orderingKey == "callback:cb1" && event.createdAt == 30)
        #expect(event.appID == scene.hookedAppID)
        let data = try #require(try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any])
        #expect(data["callback_id"] as? String == "cb1" && data["user_id"] as? String == "alice")
        #expect(data["state"] as? String == "pushed" && data["push"] as? Int == 1 && data["devices"] as? Int == 3)
        return waiting
    }

    /// A snooze after push 1's delivery writes no second `callback.pushed` of it; push 2,
    /// answered before its outcome comes, has its event written ahead of the answer's, and the
    /// delivery recorded after it (with a retry in the batch) writes no other.
    private static func pushedEventsAroundAnswers(
        _ scene: CallbackPushedScene,
        waiting: CallbackRecord
    )
        async throws
    {
        let store = scene.store
        let pushed1 = CallbackPushSubject.pushedEventID(callbackID: "cb1", push: 1)
        let pushed2 = CallbackPushSubject.pushedEventID(callbackID: "cb1", push: 2)
        try await scene.answer(waiting, "snooze", .scheduled, due: 300, at: 40)
        #expect(try await scene.events("cb1").map(\.event.id) == [pushed1, "cb1-snooze"])

        let second = try await scene.push("cb1", 2, to: ["h1"], at: 400)
        _ = try await store.accept(StoreFixtures.ingest([StoreFixtures.push("m1", device: "h1", at: 400)]))
        #expect(Set(try await claimIDs(store, now: 410)) == ["cb1-2-h1", "m1"])
        try await scene.answer(second, "ready", .connected, due: 300, at: 420)
        try await store.complete(
            [
                delivered("cb1-2-h1"),
                PushCompletion(pushID: "m1", disposition: .retry(at: 900_000), reason: "Throttled", deadToken: nil),
            ],
            now: 430
        )
        let all = try await scene.events("cb1")
        #expect(all.map(\.event.id) == [pushed1, "cb1-snooze", pushed2, "cb1-ready"])
        let early = try #require(all.first { $0.event.id == pushed2 }).event
        #expect(early.createdAt == 420)
        let earlyData = try #require(
            try JSONSerialization.jsonObject(with: Data(early.data.utf8)) as? [String: Any]
        )
        #expect(earlyData["push"] as? Int == 2 && earlyData["devices"] as? Int == 1)
    }

    /// Expired before the delivery was recorded: its expiry stays its last event.
    private static func noPushedAfterExpiry(_ scene: CallbackPushedScene) async throws {
        let store = scene.store
        try await scene.schedule("cb2", expires: 1_000)
        let expiring = try await scene.push("cb2", 1, to: ["h2"], at: 500)
        #expect(try await claimIDs(store, now: 510) == ["cb2-1-h2"])
        let claimed = try #require(
            try await store.claimDueCallbacks(limit: 10, owner: "s", now: 1_000, leaseUntil: 1_100).first
        )
        #expect(claimed.id == expiring.id)
        let expiry = CallbackChange(
            callbackID: "cb2",
            expectedVersion: claimed.version,
            state: .expired,
            dueAt: claimed.dueAt,
            history: [CallbackHistoryEntry(at: 1_000, event: .expired, state: .expired)],
            events: [callbackEvent("cb2-expired", .callbackExpired, callback: "cb2", at: 1_000)],
            now: 1_000
        )
        #expect(try await store.changeCallback(expiry))
        try await store.complete([delivered("cb2-1-h2")], now: 1_010)
        #expect(try await scene.events("cb2").map(\.event.id) == ["cb2-expired"])
    }

    /// Queued before the subject named the push number (its event was written then); an app
    /// without a webhook: no event.
    private static func noPushedWithoutNumberOrWebhook(_ scene: CallbackPushedScene) async throws {
        let store = scene.store
        try await scene.schedule("cb3")
        _ = try await scene.push("cb3", 1, to: ["h3"], at: 2_000, subject: "cb3")
        try await scene.schedule("cb4", app: StoreFixtures.appID)
        _ = try await scene.push("cb4", 1, to: ["d1"], at: 2_000)
        #expect(Set(try await claimIDs(store, now: 2_010)) == ["cb3-1-h3", "cb4-1-d1"])
        try await store.complete([delivered("cb3-1-h3"), delivered("cb4-1-d1")], now: 2_020)
        #expect(try await scene.events("cb3").isEmpty)
        #expect(try await scene.events("cb4").isEmpty)
    }

    private static func delivered(_ id: String) -> PushCompletion {
        PushCompletion(pushID: id, disposition: .finish(.delivered), reason: nil, deadToken: nil)
    }
}

/// The store and the hooked app `callbackPushedWhenDelivered` works in, and its steps as the
/// scheduler and the answer route take them.
private struct CallbackPushedScene {
    let store: any HeraldStore
    /// The app with a webhook; its devices are h1, h2 and h3, all alice's.
    let hookedAppID: String

    func schedule(_ id: String, app: String? = nil, expires: Int64 = 100_000) async throws {
        let app = app ?? hookedAppID
        var record = StoreConformance.callbackRecord(id, due: 0, expires: expires)
        record.appID = app
        record.userID = app == hookedAppID ? "alice" : "u"
        _ = try await store.scheduleCallback(
            record,
            history: CallbackHistoryEntry(at: 0, event: .scheduled, state: .scheduled, nextPushAt: 0),
            idempotencyKey: nil
        )
    }

    /// Claims the callback and queues its push `number` to `devices`, as the scheduler does.
    func push(
        _ id: String,
        _ number: Int,
        to devices: [String],
        at time: Int64,
        subject: String? = nil
    ) async throws -> CallbackRecord {
        let claims = try await store.claimDueCallbacks(limit: 10, owner: "s", now: time, leaseUntil: time + 100)
        let claimed = try #require(claims.first { $0.id == id })
        let pushes = devices.map { device in
            var entry = StoreFixtures.push("\(id)-\(number)-\(device)", device: device, kind: .callback, at: time)
            entry.subjectID = subject ?? CallbackPushSubject.make(callbackID: id, push: number)
            return entry
        }
        let change = CallbackChange(
            callbackID: id,
            expectedVersion: claimed.version,
            state: .pushed,
            dueAt: claimed.dueAt,
            pushed: 1,
            history: [CallbackHistoryEntry(at: time, event: .pushed, state: .pushed, sequence: number)],
            pushes: pushes,
            now: time
        )
        #expect(try await store.changeCallback(change))
        return try #require(try await store.callback(id: id))
    }

    func answer(
        _ record: CallbackRecord,
        _ action: String,
        _ state: CallbackState,
        due: Int64,
        at time: Int64
    )
        async throws
    {
        let change = CallbackChange(
            callbackID: record.id,
            expectedVersion: record.version,
            state: state,
            dueAt: due,
            lastAction: action,
            history: [CallbackHistoryEntry(at: time, event: .action, state: state, action: action)],
            events: [
                StoreConformance.callbackEvent("\(record.id)-\(action)", .callbackAction, callback: record.id, at: time)
            ],
            answeredPush: record.pushes,
            now: time
        )
        #expect(try await store.changeCallback(change))
    }

    func events(_ id: String) async throws -> [StoredWebhookEvent] {
        try await store.callbackWebhookEvents(callbackID: id)
    }
}
