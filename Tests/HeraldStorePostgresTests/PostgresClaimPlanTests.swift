import HeraldPush
import HeraldStore
import HeraldTestSupport
import PostgresNIO
import Testing

@testable import HeraldStorePostgres

/// The prepared claim (`ClaimStatement`) reads the queue in its order off an index holding the
/// claim's own expression (`COALESCE(waiting_since, created_at)`): its generic plan, the one a
/// prepared statement settles on, sorts nothing, so a claim stops at its limit however long the
/// backlog.
@Suite("PostgreSQL claim plan", .timeLimit(.minutes(2)))
struct PostgresClaimPlanTests {
    @Test("the prepared claim's generic plan walks a queued index in the queue's order, without a sort")
    func claimUsesTheQueueIndex() async throws {
        let engine = try PostgresEngine()
        defer { Task { await engine.tearDown() } }
        let store = try await engine.openStore(engine.makeStorage())
        try await store.saveApp(StoreFixtures.app())
        try await store.saveDevice(StoreFixtures.device("d1"))
        var pushes: [OutboxEntry] = []
        for index in 0..<5_000 {
            var push = StoreFixtures.push("p\(index)", device: "d1", at: Int64(index))
            if index.isMultiple(of: 3) { push.waitingSince = Int64(index) - 500 }
            pushes.append(push)
        }
        for batch in stride(from: 0, to: pushes.count, by: 500) {
            _ = try await store.accept(StoreFixtures.ingest(Array(pushes[batch..<min(batch + 500, pushes.count)])))
        }
        try await store.execute(unsafeSQL: "ANALYZE outbox")
        let plan = try await store.transaction("explain the claim") { connection -> [String] in
            try await connection.query(
                PostgresQuery(
                    unsafeSQL: "PREPARE claim_plan(bigint, text[], bigint, text, bigint) AS " + ClaimStatement.sql
                ),
                logger: connection.logger
            ).collect()
            try await connection.query("SET LOCAL plan_cache_mode = force_generic_plan", logger: connection.logger)
                .collect()
            let rows = try await connection.query(
                "EXPLAIN EXECUTE claim_plan(5000, ARRAY['apns', 'fcm'], 256, 'w', 9000)",
                logger: connection.logger
            ).collect()
            try await connection.query("DEALLOCATE claim_plan", logger: connection.logger).collect()
            return try rows.map { try $0.decode(String.self) }
        }
        let text = plan.joined(separator: "\n")
        #expect(text.contains("Index Scan using outbox_queued"), "\(text)")
        #expect(!text.contains("Sort"), "\(text)")
        let claimed = try await store.claim(limit: 3, owner: "w", now: 5_000, leaseUntil: 9_000)
        #expect(claimed.map(\.entry.pushID) == ["p0", "p3", "p6"])
    }
}
