import HeraldMacros

/// The backends' API keys (one per app or an admin key for all of them, each with its scopes) and
/// the audit log of who changed apps, keys and devices.
///
/// A key's secret is never stored: only its digest, which the relay compares with the digest of
/// the presented secret. Keys live in the store so that every node on it sees a key made or
/// revoked by `herald keys api` without a restart. Keys and audit entries are written through
/// `ChangeStore.apply` (a key's change and its audit entry in one transaction).
public protocol APIKeyStore: Sendable {
    /// Every key, revoked ones included, oldest first.
    func apiKeys() async throws -> [APIKeyRecord]

    /// Audit entries newest first, before `before` (an entry id) when given, at most `limit`.
    func auditEntries(before: String?, limit: Int) async throws -> [AuditEntry]
}

/// One stored API key.
@MemberwiseInit
public struct APIKeyRecord: Sendable, Hashable {
    /// The key's public id (in its token and in logs): 16 lowercase hex characters.
    public var id: String
    /// The operator's name for it ("crm-eu", "genesys-prod").
    public var name: String
    /// The one app the key acts for; `nil` for an admin key, which acts for every app.
    public var appID: String?
    /// What the key may do.
    public var scopes: Set<APIScope>
    /// BLAKE2b-256 of the key's secret (`APIKeyToken.digest`).
    public var secretDigest: [UInt8]
    /// Messages per second this key may send, with `burst` at once; `nil`: only the app's quota.
    public var ratePerSecond: Double?
    /// The burst of `ratePerSecond`.
    public var burst: Int?
    /// Milliseconds since the epoch.
    public var createdAt: Int64
    /// When it was revoked; `nil` while it is valid.
    public var revokedAt: Int64?

    /// The scopes as stored: their names, sorted, comma-separated.
    public var scopesText: String { scopes.sorted().map(\.rawValue).joined(separator: ",") }

    /// Scopes from their stored text; unknown names are dropped (a newer release's scope an older
    /// node does not know grants nothing there).
    public static func scopes(from text: String) -> Set<APIScope> {
        Set(text.split(separator: ",").compactMap { APIScope(rawValue: String($0)) })
    }
}

/// One change to apps, keys or devices, and who made it.
@MemberwiseInit
public struct AuditEntry: Sendable, Hashable, Codable {
    /// Time-ordered, unique.
    public var id: String
    /// Milliseconds since the epoch.
    public var at: Int64
    /// Who: `key:<id>` (an API key), `api_key` (the configured admin key), `device:<id>` (a
    /// device's own credential), `cli` (`herald keys api`, `herald operators` on the node's
    /// machine).
    public var actor: String
    /// What: `app.saved`, `key.created`, `key.revoked`, `device.activated`,
    /// `device.reactivated`, `device.tokens_updated`, `device.deactivated`, `operator.added`,
    /// `operator.replaced`, `operator.removed`.
    public var action: String
    /// The app, key or device changed.
    public var target: String
    /// The app the change belongs to, when there is one.
    public var appID: String?

    enum CodingKeys: String, CodingKey {
        case id, at, actor, action, target
        case appID = "app"
    }
}
