/// Why the device side could not do something.
public struct DeviceError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Hashable, Sendable {
        case store
        case relay
        case sandbox
        case payload
    }

    private let code: Code
    /// What went wrong, for a person; never key material or message text.
    public let detail: String

    private init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { detail }

    /// A stable name for the kind of failure.
    public var identifier: String { code.rawValue }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// The app-group store cannot be read or written.
    public static func store(_ detail: String) -> Self { Self(.store, detail) }
    /// The relay refused or could not be reached.
    public static func relay(_ detail: String) -> Self { Self(.relay, detail) }
    /// The sandbox refused or could not be reached.
    public static func sandbox(_ detail: String) -> Self { Self(.sandbox, detail) }
    /// A push payload is not what Herald sends.
    public static func payload(_ detail: String) -> Self { Self(.payload, detail) }
}
