/// What an operator of the console may do.
public enum OperatorRole: String, Sendable, Hashable, Codable, CaseIterable {
    /// Looks only: pushes, devices, calls, callbacks, the overview.
    case viewer
    /// Looks and acts: deactivates devices, starts simulations.
    case `operator`
}

/// The name an operator signs in with.
public enum OperatorName {
    /// The longest name, in characters.
    public static let maximumLength = 64

    /// Whether `name` may name an operator: 1 to 64 of `a`–`z`, `0`–`9`, `.`, `_` and `-`. Lower
    /// case only, so two names that look alike at sign-in are one name.
    public static func isValid(_ name: String) -> Bool {
        let bytes = name.utf8
        return (1...maximumLength).contains(bytes.count)
            && bytes.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }
}
