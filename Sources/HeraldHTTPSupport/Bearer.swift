/// `authorization: Bearer <token>` (RFC 6750 §2.1), as every Herald listener reads it.
public enum Bearer {
    /// The token of an `authorization` value, if it uses the Bearer scheme (the scheme's name in
    /// any case, surrounding spaces dropped); nil for another scheme or an empty token.
    public static func token(in authorization: String?) -> Substring? {
        guard let authorization, authorization.utf8.count > 7,
            authorization.utf8.prefix(7).lazy.map({ $0 | 0x20 }).elementsEqual("bearer ".utf8)
        else { return nil }
        var token = Substring(authorization).dropFirst(7)
        while token.first == " " { token = token.dropFirst() }
        while token.last == " " { token = token.dropLast() }
        return token.isEmpty ? nil : token
    }

    /// Whether `authorization` carries exactly `secret`, compared in constant time.
    public static func matches(_ authorization: String?, secret: [UInt8]) -> Bool {
        guard let token = token(in: authorization) else { return false }
        return ConstantTime.equal(Array(token.utf8), secret)
    }
}

/// Comparisons whose time does not depend on where two secrets differ.
public enum ConstantTime {
    /// Whether the two byte arrays are equal; the time depends only on their lengths. Arrays,
    /// not any collection: a generic version is not specialized across modules, and every request
    /// pays for its compare.
    public static func equal(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
