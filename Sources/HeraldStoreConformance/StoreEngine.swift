public import HeraldStore

/// How the conformance rules get stores of one engine.
///
/// Storage is what an engine keeps its data in (a SQLite file, a PostgreSQL database or schema).
/// Each rule asks for fresh storage and opens one or more stores on it: two stores on the same
/// storage are two relay nodes sharing a database, or one node before and after a restart.
public protocol StoreEngine: Sendable {
    /// Where a store's data lives.
    associatedtype Storage: Sendable

    /// New, empty storage that no other rule sees.
    func makeStorage() async throws -> Storage

    /// Opens a store on `storage`, migrated and ready. Called again on the same storage, it opens
    /// another store on the same data.
    func open(_ storage: Storage) async throws -> any HeraldStore

    /// Every record the engine's export (`StoreExport`) hands over from `storage`, once no store
    /// opened on it is in use any more; `nil` for an engine that does not export (the default).
    func exportedRecords(_ storage: Storage) async throws -> [StoreRecord]?
}

extension StoreEngine {
    public func exportedRecords(_ storage: Storage) async throws -> [StoreRecord]? { nil }

    /// A store on new, empty storage.
    public func makeStore() async throws -> any HeraldStore {
        try await open(try await makeStorage())
    }
}
