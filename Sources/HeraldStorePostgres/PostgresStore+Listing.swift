public import HeraldStore
import PostgresNIO

extension PostgresStore {
    /// As on SQLite: the one statement `listingStatement` makes. Not prepared: PostgreSQL plans
    /// it with the values bound, so a condition left out costs nothing.
    public func pushes(matching query: PushQuery) async throws -> PushPage {
        let (sql, values) = query.listingStatement { "$\($0)" }
        var bindings = PostgresBindings(capacity: values.count)
        for value in values { bindings.append(value) }
        let rows = try await rows("list pushes", PostgresQuery(unsafeSQL: sql, binds: bindings))
        let pushes: [PushSummary]
        do {
            pushes = try rows.map { try $0.record(PushSummary.self) }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.corrupt.with(detail: "list pushes: \(error)")
        }
        return PushPage(rows: pushes, of: query)
    }
}
