import HeraldMacros

/// The APNs provider token of each (team, key id), kept where every node of a cluster reads it, so
/// that APNs sees one token per key however many nodes send with it.
///
/// The store keeps the token as opaque bytes: the caller seals it (it is a bearer credential)
/// before it is stored, and opens it after it is read. Replacing it is a compare-and-set on the
/// version the caller last saw, so when several nodes decide at once that the token is due, one
/// of them replaces it and the others read the winner's.
public protocol ProviderTokenStore: ChangeStore {
    /// The stored token of a key, or `nil` when none was ever stored.
    func providerToken(teamID: String, keyID: String) async throws -> ProviderTokenRecord?
}

/// One key's stored provider token.
@MemberwiseInit
public struct ProviderTokenRecord: Sendable, Hashable {
    /// The team (`iss`).
    public var teamID: String
    /// The key id (`kid`).
    public var keyID: String
    /// 1 for the first token stored for the key, one more at each replacement.
    public var version: Int64
    /// The token as its writer sealed it.
    public var sealedToken: [UInt8]
    /// When it was signed, in milliseconds since the epoch (not secret: it is what its age is
    /// judged by without opening it).
    public var issuedAt: Int64
}

/// What became of a compare-and-set of a provider token.
public enum ProviderTokenSwap: Sendable, Hashable {
    /// The caller's token is stored now, as this record.
    case replaced(ProviderTokenRecord)
    /// Another token was stored since the caller read: this one (`nil` only when the caller named
    /// a version while none is stored).
    case lost(current: ProviderTokenRecord?)

    /// The record stored after the call, whoever wrote it.
    public var stored: ProviderTokenRecord? {
        switch self {
        case .replaced(let record): record
        case .lost(let current): current
        }
    }
}
