import Foundation
import GRDB
import HeraldPush
import HeraldStore
import HeraldTestSupport
import Logging
import Testing

@testable import HeraldStoreSQLite

/// The claim reads the queue in its order off an index (`COALESCE(waiting_since, created_at)`,
/// the customer's wait or the time in the queue), for every network and for one: it stops at its
/// limit however long the backlog, and sorts nothing.
@Suite("SQLite claim plan")
struct SQLiteClaimPlanTests {
    @Test("the claim's pick walks a queued index in the queue's order, without a sort", arguments: [false, true])
    func claimUsesTheQueueIndex(oneNetwork: Bool) async throws {
        let directory = NSTemporaryDirectory() + "herald-claim-plan-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(
            configuration: .init(path: directory + "/herald.sqlite"),
            logger: Logger(label: "test.claim-plan")
        )
        try await store.saveApp(StoreFixtures.app())
        try await store.saveDevice(StoreFixtures.device("d1"))
        var pushes: [OutboxEntry] = []
        for index in 0..<2_000 {
            var push = StoreFixtures.push("p\(index)", device: "d1", at: Int64(index))
            if index.isMultiple(of: 3) { push.waitingSince = Int64(index) - 500 }
            pushes.append(push)
        }
        _ = try await store.accept(StoreFixtures.ingest(pushes))
        let condition = oneNetwork ? "AND network IN ('apns')" : ""
        let plan = try await store.write { db in
            try db.execute(sql: "ANALYZE")
            return try Row.fetchAll(
                db,
                sql: """
                    EXPLAIN QUERY PLAN
                    SELECT push_id FROM outbox WHERE state = 'queued' AND next_attempt_at <= 5000 \(condition)
                    ORDER BY priority DESC, COALESCE(waiting_since, created_at) ASC LIMIT 256
                    """
            ).map { $0["detail"] as String }
        }
        let index = oneNetwork ? "outbox_queued_by_network" : "outbox_queued"
        #expect(plan.contains { $0.contains("USING INDEX \(index)") }, "\(plan)")
        #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
        // The claim itself, in that order.
        let claimed = try await store.claim(limit: 3, owner: "w", now: 5_000, leaseUntil: 9_000)
        #expect(claimed.map(\.entry.pushID) == ["p0", "p3", "p6"])
    }
}
