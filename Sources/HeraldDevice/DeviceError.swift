public import HeraldDomain

/// Why the device side could not do something.
public struct DeviceError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Hashable, Sendable {
        case store
        case relay
        case sandbox
        case payload
    }

    /// The kind and the words; equality and hashing look at the kind only.
    private let kind: ErrorKind<Code>
    /// What went wrong, for a person; never key material or message text.
    public var detail: String { kind.text }

    /// Why an envelope did not open, as a `failed` receipt says it (docs/receipts.md); nil for
    /// any other failure.
    public let unopened: ReceiptFailure?

    private init(_ code: Code, _ detail: String, unopened: ReceiptFailure? = nil) {
        kind = ErrorKind(code, detail)
        self.unopened = unopened
    }

    public var description: String { detail }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.kind == rhs.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// A stable name for the kind of failure.
    public var identifier: String { kind.code.rawValue }

    /// The app-group store cannot be read or written.
    public static func store(_ detail: String) -> Self { Self(.store, detail) }
    /// The relay refused or could not be reached.
    public static func relay(_ detail: String) -> Self { Self(.relay, detail) }
    /// The sandbox refused or could not be reached.
    public static func sandbox(_ detail: String) -> Self { Self(.sandbox, detail) }
    /// A push payload is not what Herald sends.
    public static func payload(_ detail: String) -> Self { Self(.payload, detail) }
    /// A push's envelope did not open, for `why`.
    public static func unopened(_ detail: String, _ why: ReceiptFailure) -> Self {
        Self(.payload, detail, unopened: why)
    }
}
