import HeraldPush
import HeraldStore
import HeraldTestSupport
import PostgresNIO
import Testing

@testable import HeraldStorePostgres

/// The dispatcher's statements on the outbox (claim, finish) run unnamed, so PostgreSQL plans
/// them for the values bound (`PostgresStore.rows(_:plannedEachTime:)`). These tests explain the
/// plan such a statement gets: the claim reads the queue in its order off an index holding its
/// own expression (`COALESCE(waiting_since, created_at)`), sorting nothing; the finish finds its
/// pushes by primary key, even on an outbox that grew after the statement was first used and was
/// never analyzed (a prepared statement's generic plan then scanned the whole outbox).
@Suite("PostgreSQL claim plan", .timeLimit(.minutes(2)))
struct PostgresClaimPlanTests {
    /// The plan `sql` gets for the values in `execute` (`EXECUTE name(...)`), planned for them
    /// as an unnamed statement is.
    static func customPlan(
        _ store: PostgresStore,
        prepare: String,
        execute: String
    ) async throws -> String {
        let plan = try await store.transaction("explain") { connection -> [String] in
            try await connection.query(PostgresQuery(unsafeSQL: prepare), logger: connection.logger).collect()
            try await connection.query("SET LOCAL plan_cache_mode = force_custom_plan", logger: connection.logger)
                .collect()
            let rows = try await connection.query(
                PostgresQuery(unsafeSQL: "EXPLAIN EXECUTE " + execute),
                logger: connection.logger
            ).collect()
            try await connection.query("DEALLOCATE ALL", logger: connection.logger).collect()
            return try rows.map { try $0.decode(String.self) }
        }
        return plan.joined(separator: "\n")
    }

    static func accept(_ pushes: [OutboxEntry], into store: PostgresStore) async throws {
        for batch in stride(from: 0, to: pushes.count, by: 500) {
            _ = try await store.accept(StoreFixtures.ingest(Array(pushes[batch..<min(batch + 500, pushes.count)])))
        }
    }

    @Test("the claim walks a queued index in the queue's order, without a sort")
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
        try await Self.accept(pushes, into: store)
        try await store.execute(unsafeSQL: "ANALYZE outbox")
        let text = try await Self.customPlan(
            store,
            prepare: "PREPARE claim_plan(bigint, text[], bigint, text, bigint) AS " + ClaimStatement.sql,
            execute: "claim_plan(5000, ARRAY['apns', 'fcm'], 256, 'w', 9000)"
        )
        #expect(text.contains("Index Scan using outbox_queued"), "\(text)")
        #expect(!text.contains("Sort"), "\(text)")
        let claimed = try await store.claim(limit: 3, owner: "w", now: 5_000, leaseUntil: 9_000)
        #expect(claimed.map(\.entry.pushID) == ["p0", "p3", "p6"])
    }

    @Test("the finish reads its pushes by key on an outbox that grew since it was last analyzed")
    func finishUsesThePrimaryKeyAfterGrowth() async throws {
        let engine = try PostgresEngine()
        defer { Task { await engine.tearDown() } }
        let store = try await engine.openStore(engine.makeStorage())
        try await store.saveApp(StoreFixtures.app())
        try await store.saveDevice(StoreFixtures.device("d1"))
        // A young outbox, analyzed while small (autovacuum analyzes a table early in its life).
        try await Self.accept((0..<400).map { StoreFixtures.push("first\($0)", device: "d1", at: 0) }, into: store)
        try await store.execute(unsafeSQL: "ANALYZE outbox")
        let execute = "finish_plan(ARRAY['p1', 'p2'], ARRAY['delivered', 'delivered'], ARRAY['', ''], "
            + "ARRAY[false, false], 3)"
        let (cached, planned) = try await store.transaction("explain") { connection -> (String, String) in
            func run(_ sql: String) async throws -> [String] {
                try await connection.query(PostgresQuery(unsafeSQL: sql), logger: connection.logger).collect()
                    .map { try $0.decode(String.self) }
            }
            // First uses on that outbox: a prepared statement settles its generic plan on these
            // and keeps it until the next ANALYZE.
            _ = try await connection.query(
                PostgresQuery(
                    unsafeSQL: "PREPARE finish_plan(text[], text[], text[], bool[], bigint) AS " + FinishStatement.sql
                ),
                logger: connection.logger
            ).collect()
            for index in 0..<8 {
                _ = try await run(
                    "EXECUTE finish_plan(ARRAY['first\(index)'], ARRAY['delivered'], ARRAY[''], ARRAY[false], 2)"
                )
            }
            // Then the outbox grows, faster than autovacuum analyzes it again.
            try await Self.accept(
                (0..<20_000).map { StoreFixtures.push("p\($0)", device: "d1", at: Int64($0)) },
                into: store
            )
            let cached = try await run("EXPLAIN EXECUTE " + execute).joined(separator: "\n")
            _ = try await run("SET LOCAL plan_cache_mode = force_custom_plan")
            let planned = try await run("EXPLAIN EXECUTE " + execute).joined(separator: "\n")
            _ = try await run("DEALLOCATE ALL")
            return (cached, planned)
        }
        // Why the store plans it each time: the kept plan scans the whole outbox for two pushes.
        #expect(cached.contains("Seq Scan on outbox"), "\(cached)")
        // What it runs: planned for the bound values, by key.
        #expect(planned.contains("Index Scan using outbox_pkey"), "\(planned)")
        #expect(!planned.contains("Seq Scan on outbox"), "\(planned)")
        _ = try await store.claim(limit: 1, owner: "w", now: 5, leaseUntil: 60_000)
        try await store.complete(
            [PushCompletion(pushID: "p0", disposition: .finish(.delivered), reason: nil, deadToken: nil)],
            now: 6
        )
        #expect(try await store.push(id: "p0")?.state == .delivered)
    }
}
