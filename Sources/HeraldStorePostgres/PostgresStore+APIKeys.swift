public import HeraldStore
import NIOCore
import PostgresNIO

extension PostgresStore {
    static func insertAPIKey(
        _ key: APIKeyRecord,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws
        -> ChangeOutcome
    {
        let rows = try await connection.run(
            """
            INSERT INTO api_keys (id, name, app_id, scopes, secret_digest, rate_per_second, burst, created_at,
                revoked_at)
            VALUES (\(key.id), \(key.name), \(key.appID), \(key.scopesText), \(ByteBuffer(key.secretDigest)),
                \(key.ratePerSecond), \(key.burst), \(key.createdAt), \(key.revokedAt))
            ON CONFLICT (id) DO NOTHING
            RETURNING id
            """,
            logger: logger
        )
        return rows.isEmpty ? .duplicate : .applied
    }

    static func revokeAPIKey(
        id: String,
        at: Int64,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws
        -> ChangeOutcome
    {
        let rows = try await connection.run(
            "UPDATE api_keys SET revoked_at = \(at) WHERE id = \(id) AND revoked_at IS NULL RETURNING id",
            logger: logger
        )
        return rows.isEmpty ? .stale : .applied
    }

    public func apiKeys() async throws -> [APIKeyRecord] {
        try await rows(
            "read the API keys",
            """
            SELECT \(unescaped: Self.apiKeyColumns) FROM api_keys ORDER BY created_at, id
            """
        ).map(Self.apiKey(from:))
    }

    /// The columns `apiKey(from:)` reads, in its order.
    static let apiKeyColumns = "id, name, app_id, scopes, secret_digest, rate_per_second, burst, created_at, revoked_at"

    /// A key from a row of `apiKeyColumns`.
    static func apiKey(from row: PostgresRow) throws -> APIKeyRecord {
        let (id, name, app, scopes, digest, rate, burst, created, revoked) = try row.decode(
            (String, String, String?, String, ByteBuffer, Double?, Int?, Int64, Int64?).self
        )
        return APIKeyRecord(
            id: id,
            name: name,
            appID: app,
            scopes: APIKeyRecord.scopes(from: scopes),
            secretDigest: Array(digest.readableBytesView),
            ratePerSecond: rate,
            burst: burst,
            createdAt: created,
            revokedAt: revoked
        )
    }

    static func appendAudit(_ entry: AuditEntry, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run(
            """
            INSERT INTO audit_log (id, at, actor, action, target, app_id)
            VALUES (\(entry.id), \(entry.at), \(entry.actor), \(entry.action), \(entry.target), \(entry.appID))
            """,
            logger: logger
        )
    }

    public func auditEntries(before: String?, limit: Int) async throws -> [AuditEntry] {
        try await rows(
            "read the audit log",
            """
            SELECT id, at, actor, action, target, app_id FROM audit_log
            WHERE \(before)::TEXT IS NULL OR id < \(before) ORDER BY id DESC LIMIT \(limit)
            """
        ).map { row in
            let (id, at, actor, action, target, app) = try row.decode(
                (String, Int64, String, String, String, String?).self
            )
            return AuditEntry(id: id, at: at, actor: actor, action: action, target: target, appID: app)
        }
    }
}
