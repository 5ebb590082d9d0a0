import HeraldMacros

/// Where a database's schema stands against this build, as `herald check` reports it: a schema
/// newer than the build is one a newer release migrated, and this build must not run on it.
@MemberwiseInit
public struct SchemaStatus: Sendable, Hashable {
    /// The migrations applied to the database (0: none yet; the first start applies them).
    public var version: Int
    /// The migrations this build knows.
    public var latest: Int

    /// The database was migrated by a newer build.
    public var isNewer: Bool { version > latest }
}
