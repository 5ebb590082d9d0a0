public import HeraldStore
import PostgresNIO

extension PostgresStore {
    /// As on SQLite: the one statement `listingStatement` makes. Not prepared: PostgreSQL plans
    /// it with the values bound, so a condition left out costs nothing.
    public func pushes(matching query: PushQuery) async throws -> PushPage {
        let pushes: [PushSummary] = try await records("list pushes", query.listingStatement { "$\($0)" })
        return PushPage(rows: pushes, of: query)
    }

    public func pushSummaries(ids: [String]) async throws -> [PushSummary] {
        guard let lookup = try PushSummary.lookupStatement(ids: ids, placeholder: { "$\($0)" }) else { return [] }
        return try await records("read pushes by id", lookup)
    }

    public func pushActivity(since: Int64, sampleLimit: Int) async throws -> PushActivity {
        let counts = Self.query(PushActivity.countsStatement(since: since) { "$\($0)" })
        let samples = Self.query(PushActivity.samplesStatement(since: since, limit: sampleLimit) { "$\($0)" })
        return try await transaction("read the push activity") { [logger] connection in
            // One snapshot for both statements: the counts and the samples see the same outbox.
            try await connection.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            return PushActivity(
                unorderedCounts: try await connection.run(counts, logger: logger)
                    .map { try $0.record(PushActivity.Count.self) },
                samples: try await connection.run(samples, logger: logger).map {
                    try $0.record(PushActivity.Sample.self)
                }
            )
        }
    }

    /// A shared statement with its values bound.
    private static func query(_ statement: (sql: String, values: [StoreValue])) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: statement.values.count)
        for value in statement.values { bindings.append(value) }
        return PostgresQuery(unsafeSQL: statement.sql, binds: bindings)
    }

    /// The records a shared statement reads; a row that does not read as one is `corrupt`.
    private func records<Record: ColumnsDecodable>(
        _ what: String,
        _ statement: (sql: String, values: [StoreValue])
    ) async throws -> [Record] {
        let rows = try await rows(what, Self.query(statement))
        do {
            return try rows.map { try $0.record(Record.self) }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.corrupt.with(detail: "\(what): \(error)")
        }
    }
}
