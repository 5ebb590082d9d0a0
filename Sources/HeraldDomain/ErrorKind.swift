/// What an error struct holds: its kind (the struct's private `Code`) and its words for a person.
///
/// Herald's error structs compare by kind alone, so `error == .timeout` holds whatever detail a
/// path or an errno added to the words; keeping the two together here gives every such struct
/// that rule by its synthesized `Hashable`, instead of a hand-written `==` and `hash(into:)` each.
public struct ErrorKind<Code: Hashable & Sendable>: Sendable, Hashable {
    /// The kind of failure.
    public let code: Code
    /// What went wrong, in words; not part of the error's identity.
    public let text: String

    /// An error of kind `code` saying `text`.
    public init(_ code: Code, _ text: String) {
        self.code = code
        self.text = text
    }

    /// Whether the two are of the same kind, whatever their words.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
