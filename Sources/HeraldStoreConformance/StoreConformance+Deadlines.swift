import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// A push's deadlines are written with its ingest (not with a duplicate), claimed when due by
    /// one owner at a time (a lapsed claim by the next), settled once by the owner that holds
    /// them with what their action wrote (nothing of it when another owner or a receipt came
    /// first), and cancelled by a receipt; a device's unreported calls are counted and go with
    /// the device; an app's rules round-trip; a message's devices are read by its id.
    public static func deadlinesAreSettledOnce(_ engine: some StoreEngine) async throws {
        let (store, storage) = try await fresh(engine)
        let other = try await engine.open(storage)
        var app = StoreFixtures.app()
        app.deadlines = [
            DeadlineRule(kind: .message, after: 120, action: .otherDevices),
            DeadlineRule(kind: .call, after: 20, action: .notify),
        ]
        try await store.saveApp(app)
        #expect(try await other.app(id: app.id)?.deadlines == app.deadlines)
        for id in ["d1", "d2", "d3"] { try await store.saveDevice(StoreFixtures.device(id)) }

        let pushes = [StoreFixtures.push("p", device: "d1", at: 100), StoreFixtures.push("q", device: "d2", at: 100)]
        var ingest = StoreFixtures.ingest(pushes, key: "k")
        ingest.deadlines = [
            PushDeadline(pushID: "p", deviceID: "d1", action: .notify, dueAt: 1_000),
            PushDeadline(pushID: "p", deviceID: "d1", action: .callKitReport, dueAt: 2_000),
            PushDeadline(pushID: "q", deviceID: "d2", action: .resend, dueAt: 3_000),
        ]
        #expect(try await store.apply(.accept(ingest)) == .applied)
        var twin = ingest
        twin.deadlines = [PushDeadline(pushID: "p", deviceID: "d1", action: .ring, dueAt: 10)]
        #expect(try await store.apply(.accept(twin)) == .duplicate)
        #expect(try await other.nextDeadlineDueTime() == 1_000)
        #expect(try await other.devicesSent(subjectID: "s-p", since: 100, among: ["d1", "d2", "d3"]) == ["d1"])
        #expect(try await other.devicesSent(subjectID: "s-p", since: 101, among: ["d1"]) == [])

        // Due at 1,000: one owner holds it through its lease.
        #expect(try await store.claimDueDeadlines(limit: 10, owner: "a", now: 999, leaseUntil: 5_000).isEmpty)
        let claimed = try await store.claimDueDeadlines(limit: 10, owner: "a", now: 1_000, leaseUntil: 5_000)
        #expect(claimed == [PushDeadline(pushID: "p", deviceID: "d1", action: .notify, dueAt: 1_000)])
        #expect(try await other.claimDueDeadlines(limit: 10, owner: "b", now: 1_500, leaseUntil: 9_000).isEmpty)

        // Only its owner settles it, once, with what its action wrote.
        let event = subjectEvent("e-unseen", .pushUnseen, subject: "push", "p", at: 1_000)
        let notify = claimed[0]
        #expect(
            try await other.apply(.settleDeadline(notify, owner: "b", then: [.enqueueWebhookEvents([event])])) == .stale
        )
        #expect(try await store.webhookEvent(id: "e-unseen") == nil)
        #expect(
            try await store.apply(.settleDeadline(notify, owner: "a", then: [.enqueueWebhookEvents([event])]))
                == .applied
        )
        #expect(try await other.webhookEvent(id: "e-unseen") != nil)
        let again = subjectEvent("e-unseen-2", .pushUnseen, subject: "push", "p", at: 1_001)
        #expect(
            try await store.apply(.settleDeadline(notify, owner: "a", then: [.enqueueWebhookEvents([again])])) == .stale
        )
        #expect(try await store.webhookEvent(id: "e-unseen-2") == nil)

        // A claimer that dies: its claim lapses and another owner takes the deadline.
        let report = try await store.claimDueDeadlines(limit: 10, owner: "a", now: 2_000, leaseUntil: 2_500)
        #expect(report.map(\.action) == [.callKitReport])
        #expect(try await other.claimDueDeadlines(limit: 10, owner: "b", now: 2_400, leaseUntil: 9_000).isEmpty)
        let taken = try await other.claimDueDeadlines(limit: 10, owner: "b", now: 2_600, leaseUntil: 9_000)
        #expect(taken == report)
        #expect(try await store.apply(.settleDeadline(report[0], owner: "a", then: [])) == .stale)
        #expect(
            try await other.apply(
                .settleDeadline(taken[0], owner: "b", then: [.countUnreportedCall(deviceID: "d1", at: 2_600)])
            ) == .applied
        )
        #expect(try await store.apply(.countUnreportedCall(deviceID: "d1", at: 2_700)) == .applied)
        #expect(try await other.unreportedCalls(deviceID: "d1") == UnreportedCalls(count: 2, lastAt: 2_700))
        #expect(try await other.unreportedCalls(deviceID: "d2") == nil)

        // A receipt cancels a deadline, even one claimed already: its settling writes nothing.
        let resend = try await store.claimDueDeadlines(limit: 10, owner: "a", now: 3_000, leaseUntil: 9_000)
        #expect(resend.map(\.pushID) == ["q"])
        #expect(try await other.apply(.cancelDeadlines(pushIDs: ["q", "ghost"])) == .applied)
        #expect(
            try await store.apply(.settleDeadline(resend[0], owner: "a", then: [.enqueueWebhookEvents([again])]))
                == .stale
        )
        #expect(try await store.webhookEvent(id: "e-unseen-2") == nil)
        #expect(try await other.nextDeadlineDueTime() == nil)

        // Concurrent claimers never share a deadline (each takes what the other left).
        var many = StoreFixtures.ingest((0..<20).map { StoreFixtures.push("m\($0)", device: "d3", at: 200) })
        many.deadlines = many.pushes.map {
            PushDeadline(pushID: $0.pushID, deviceID: "d3", action: .notify, dueAt: 4_000)
        }
        #expect(try await store.apply(.accept(many)) == .applied)
        let split = try await withThrowingTaskGroup(of: [PushDeadline].self) { group in
            for (index, node) in [store, other].enumerated() {
                group.addTask {
                    try await node.claimDueDeadlines(limit: 10, owner: "n\(index)", now: 4_000, leaseUntil: 9_000)
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(split.count == 20)
        #expect(Set(split.map(\.pushID)).count == 20)

        // Unreported calls go with their device.
        #expect(try await store.apply(.deleteDevice(id: "d1")) == .applied)
        #expect(try await other.unreportedCalls(deviceID: "d1") == nil)
    }
}
