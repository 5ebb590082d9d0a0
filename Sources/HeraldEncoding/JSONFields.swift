/// The fields a JSON request has, for `JSONCheck` to refuse a key it does not know (a misspelt
/// `idempotency_key` would otherwise be dropped by the decoder without a word). Checked in the
/// same pass as the limits, so knowing the fields costs a request nothing more.
public indirect enum JSONFields: Sendable, Hashable {
    /// Any value: a scalar, or a map whose keys are the sender's (`public_data`).
    case any
    /// An object of these keys, each with what its value may hold.
    case object([String: JSONFields])
    /// An array whose elements each hold this.
    case array(of: JSONFields)

    /// An object whose keys are `keys`' cases, each `.any` unless `nested` names it (an object or
    /// an array of objects with fields of their own). Derived from the type's `CodingKeys`, so a
    /// field added to the type is known at once.
    public static func object<Keys: CodingKey & CaseIterable>(
        _ keys: Keys.Type,
        nested: [String: JSONFields] = [:]
    ) -> JSONFields {
        var known: [String: JSONFields] = [:]
        for key in keys.allCases { known[key.stringValue] = nested[key.stringValue] ?? .any }
        // A nested name that is not a key is a mistake in the table, not a field.
        precondition(nested.keys.allSatisfy { known[$0] != nil }, "nested fields name keys the type does not have")
        return .object(known)
    }

    /// An object with the keys of both (a request whose body holds the fields of a type it
    /// shares with another); `other`'s value wins for a key both have. Anything else: self.
    public func merging(_ other: JSONFields) -> JSONFields {
        guard case .object(let mine) = self, case .object(let theirs) = other else { return self }
        return .object(mine.merging(theirs) { _, theirs in theirs })
    }

    /// What a container of this kind checks: self when it is one (an object for an object, an
    /// array for an array); nil when anything goes, or when the value is of another kind (the
    /// decoder names that).
    func isChecked(asObject: Bool) -> JSONFields? {
        switch self {
        case .object: asObject ? self : nil
        case .array: asObject ? nil : self
        case .any: nil
        }
    }
}

/// A request type whose fields are known: `JSONBody` refuses a key it does not have.
public protocol KnownJSONFields {
    /// The request's fields.
    static var jsonFields: JSONFields { get }
}

/// A value that reads more than one JSON type (a time as a number or as text): a refusal says
/// "must be" what it reads, where a plain type's name would not fit.
public protocol DescribedJSONValue {
    /// What the value may be, in words: "milliseconds since the epoch (an integer) or …".
    static var jsonDescription: String { get }
}
