import HeraldCrypto
import HeraldMacros
public import HeraldStore
import Synchronization

/// An API key's bearer token, `hk_<id>_<secret>`: the id (16 hex characters) names the key in
/// logs and the audit log; the secret (64 hex characters, 256 random bits) is shown once, when
/// the key is made, and only its digest is stored.
public struct APIKeyToken: Sendable, Hashable {
    /// Every token starts with it: a key is told from a device credential without a lookup.
    public static let prefix = "hk_"
    static let digestDomain = "herald-api-key-v1"
    static let idLength = 16
    static let secretLength = 64

    /// The key's public id.
    public let id: String
    private let secret: [UInt8]

    /// A new key's token, from the system's random source.
    public static func make() -> APIKeyToken {
        APIKeyToken(
            id: ByteEncoding.hex(SecureBytes.random(count: idLength / 2).copyBytes()),
            secret: Array(ByteEncoding.hex(SecureBytes.random(count: secretLength / 2).copyBytes()).utf8)
        )
    }

    private init(id: String, secret: [UInt8]) {
        self.id = id
        self.secret = secret
    }

    /// The token in a bearer header; `nil` for anything not shaped like one (a device credential,
    /// the configured API key).
    public init?(parsing token: some Collection<UInt8>) {
        let bytes = Array(token)
        let prefix = Array(Self.prefix.utf8)
        guard bytes.count == prefix.count + Self.idLength + 1 + Self.secretLength,
            bytes.starts(with: prefix),
            bytes[prefix.count + Self.idLength] == UInt8(ascii: "_")
        else { return nil }
        let id = bytes[prefix.count..<(prefix.count + Self.idLength)]
        let secret = bytes[(prefix.count + Self.idLength + 1)...]
        guard id.allSatisfy(Self.isLowerHex), secret.allSatisfy(Self.isLowerHex) else { return nil }
        self.init(id: String(decoding: id, as: UTF8.self), secret: Array(secret))
    }

    /// What the caller puts after `Bearer `.
    public var text: String { Self.prefix + id + "_" + String(decoding: secret, as: UTF8.self) }

    /// What the store keeps instead of the secret.
    public var digest: [UInt8] { SecretDigest.digest(secret, domain: Self.digestDomain) }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}

/// Who called a backend endpoint, and what they may do: the configured API key (an admin key
/// with every scope) or a stored key.
@MemberwiseInit
public struct Caller: Sendable, Hashable {
    /// The stored key's id; `nil` for the configured API key.
    public var keyID: String?
    /// The only app the caller acts for; `nil` for every app.
    public var appID: String?
    /// What the caller may do.
    public var scopes: Set<APIScope>
    /// The key's own message rate and burst, when it has one.
    public var ratePerSecond: Double?
    public var burst: Int?

    /// The configured API key (`keys/api.key`, HERALD_API_KEY): every scope, every app.
    public static let configuredKey = Caller(keyID: nil, appID: nil, scopes: Set(APIScope.allCases))

    /// The caller of a stored key.
    public init(_ key: APIKeyRecord) {
        self.init(
            keyID: key.id,
            appID: key.appID,
            scopes: key.scopes,
            ratePerSecond: key.ratePerSecond,
            burst: key.burst
        )
    }

    /// How the audit log and the access log name the caller.
    public var actor: String { keyID.map { "key:" + $0 } ?? "api_key" }

    /// Whether the caller may act for `app`.
    public func permits(app: String) -> Bool { appID == nil || appID == app }

}

/// What a bearer token is among the stored keys.
public enum APIKeyLookup: Sendable, Hashable {
    /// A valid stored key.
    case caller(Caller)
    /// A stored key, revoked.
    case revoked(id: String)
    /// Shaped like a key, but no stored key has its id and secret.
    case unknown
    /// Not shaped like a key (a device credential, the configured API key).
    case notAKey
}

/// The stored keys as this node knows them, refreshed from the store (`RelayKeys.refresh`).
public final class APIKeyring: Sendable {
    private let keys = Mutex<[String: APIKeyRecord]>([:])

    public init(_ keys: [APIKeyRecord] = []) {
        replace(with: keys)
    }

    /// Replaces what the node knows with the store's keys.
    public func replace(with records: [APIKeyRecord]) {
        let byID = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        keys.withLock { $0 = byID }
    }

    /// How many valid keys there are.
    public var validCount: Int { keys.withLock { $0.values.count { $0.revokedAt == nil } } }

    /// The token among the keys known now.
    public func lookup(_ token: some Collection<UInt8>) -> APIKeyLookup {
        guard let parsed = APIKeyToken(parsing: token) else { return .notAKey }
        return Self.lookup(parsed, in: keys.withLock { $0[parsed.id] })
    }

    /// The rule: the id finds the key, the secret's digest must be the stored one (compared in
    /// constant time), and a revoked key is told apart so the caller learns why.
    static func lookup(_ token: APIKeyToken, in key: APIKeyRecord?) -> APIKeyLookup {
        guard let key, SecretDigest.matches(token.digest, key.secretDigest) else { return .unknown }
        if key.revokedAt != nil { return .revoked(id: key.id) }
        return .caller(Caller(key))
    }
}
