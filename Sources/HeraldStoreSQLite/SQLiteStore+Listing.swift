import GRDB
public import HeraldStore

extension SQLiteStore {
    public func pushes(matching query: PushQuery) async throws -> PushPage {
        try await read { db in
            let (sql, values) = query.listingStatement { _ in "?" }
            let rows = try Row.fetchAll(db, sql: sql, arguments: StatementArguments(values.map(\.databaseValue)))
            return PushPage(rows: try rows.map { try $0.record(PushSummary.self) }, of: query)
        }
    }
}
