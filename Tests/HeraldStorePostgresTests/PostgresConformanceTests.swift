import HeraldStoreConformance
import Testing

/// Every store conformance rule against PostgreSQL, one test case per rule: a rule added to
/// `StoreConformance.Rule` runs here without a line more.
@Suite("PostgreSQL store conformance", .timeLimit(.minutes(2)))
struct PostgresConformanceTests {
    @Test(arguments: StoreConformance.Rule.allCases)
    func rule(_ rule: StoreConformance.Rule) async throws {
        try await PostgresEngine.check(rule)
    }
}
