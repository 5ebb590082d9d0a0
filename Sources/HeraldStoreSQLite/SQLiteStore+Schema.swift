import GRDB
public import HeraldStore

extension SQLiteStore {
    /// The schema of the database at `path`, read without writing (no migration, no WAL
    /// checkpoint): for `herald check`, which must not change what it looks at (its line names
    /// the file, so the error does not).
    public static func schemaStatus(path: String) throws(StoreError) -> SchemaStatus {
        var configuration = GRDB.Configuration()
        configuration.readonly = true
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            let migrator = Self.migrator
            let (applied, superseded) = try queue.read { db in
                (try migrator.appliedIdentifiers(db), try migrator.hasBeenSuperseded(db))
            }
            let latest = migrator.migrations.count
            // Migrations this build does not know count beyond the latest one.
            let unknown = superseded ? applied.subtracting(migrator.migrations).count : 0
            return SchemaStatus(version: applied.intersection(migrator.migrations).count + unknown, latest: latest)
        } catch {
            throw StoreError.unavailable.with(detail: "cannot read it: \(error)")
        }
    }
}
