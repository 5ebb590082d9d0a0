import GRDB
public import HeraldStore

extension SQLiteStore {
    public func pushes(matching query: PushQuery) async throws -> PushPage {
        try await read { db in
            let (sql, values) = query.listingStatement { _ in "?" }
            let rows = try Row.fetchAll(db, sql: sql, arguments: Self.arguments(values))
            return PushPage(rows: try rows.map { try $0.record(PushSummary.self) }, of: query)
        }
    }

    public func pushSummaries(ids: [String]) async throws -> [PushSummary] {
        guard let lookup = try PushSummary.lookupStatement(ids: ids, placeholder: { _ in "?" }) else { return [] }
        return try await read { db in
            try Row.fetchAll(db, sql: lookup.sql, arguments: Self.arguments(lookup.values))
                .map { try $0.record(PushSummary.self) }
        }
    }

    public func pushActivity(since: Int64, sampleLimit: Int) async throws -> PushActivity {
        let counts = PushActivity.countsStatement(since: since) { _ in "?" }
        let samples = PushActivity.samplesStatement(since: since, limit: sampleLimit) { _ in "?" }
        // One read transaction: the counts and the samples see the same outbox.
        return try await read { db in
            PushActivity(
                unorderedCounts: try Row.fetchAll(db, sql: counts.sql, arguments: Self.arguments(counts.values))
                    .map { try $0.record(PushActivity.Count.self) },
                samples: try Row.fetchAll(db, sql: samples.sql, arguments: Self.arguments(samples.values))
                    .map { try $0.record(PushActivity.Sample.self) }
            )
        }
    }

    /// A shared statement's values as GRDB binds them.
    private static func arguments(_ values: [StoreValue]) -> StatementArguments {
        StatementArguments(values.map(\.databaseValue))
    }
}
