/// A store failure the relay can act on.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case unavailable
        case corrupt
        case conflict
        case invalid
    }

    /// The kind and the words; equality and hashing look at the kind only.
    private let kind: ErrorKind<Code>
    /// What went wrong, for the operator; never holds secrets or message text.
    public var detail: String { kind.text }

    private init(_ code: Code, _ detail: String) { kind = ErrorKind(code, detail) }

    public var description: String { detail }

    /// The database cannot be opened, read or written.
    public static let unavailable = Self(.unavailable, "the store is not available")
    /// A stored row does not have the shape this build expects.
    public static let corrupt = Self(.corrupt, "a stored record is not readable")
    /// A write conflicts with stored data (a duplicate id).
    public static let conflict = Self(.conflict, "the record conflicts with a stored one")
    /// The store was asked for something it does not do (a batch it cannot apply as asked): a
    /// mistake in the caller, never in the data.
    public static let invalid = Self(.invalid, "the store cannot do what it was asked")

    /// The same kind of failure with a more precise message.
    public func with(detail: String) -> Self { Self(kind.code, detail) }
}
