import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    static func insertAPIKey(_ key: APIKeyRecord, _ db: Database) throws -> ChangeOutcome {
        try db.execute(
            sql: """
                INSERT INTO api_keys (id, name, app_id, scopes, secret_digest, rate_per_second, burst,
                    created_at, revoked_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO NOTHING
                """,
            arguments: [
                key.id, key.name, key.appID, key.scopesText, Data(key.secretDigest), key.ratePerSecond,
                key.burst, key.createdAt, key.revokedAt,
            ]
        )
        return db.changesCount == 1 ? .applied : .duplicate
    }

    static func revokeAPIKey(id: String, at: Int64, _ db: Database) throws -> ChangeOutcome {
        try db.execute(
            sql: "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            arguments: [at, id]
        )
        return db.changesCount == 1 ? .applied : .stale
    }

    public func apiKeys() async throws -> [APIKeyRecord] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, name, app_id, scopes, secret_digest, rate_per_second, burst, created_at, revoked_at
                    FROM api_keys ORDER BY created_at, id
                    """
            ).map { row in
                let digest: Data = row[4]
                return APIKeyRecord(
                    id: row[0],
                    name: row[1],
                    appID: row[2],
                    scopes: APIKeyRecord.scopes(from: row[3]),
                    secretDigest: Array(digest),
                    ratePerSecond: row[5],
                    burst: row[6],
                    createdAt: row[7],
                    revokedAt: row[8]
                )
            }
        }
    }

    static func appendAudit(_ entry: AuditEntry, _ db: Database) throws {
        try db.execute(
            sql: "INSERT INTO audit_log (id, at, actor, action, target, app_id) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [entry.id, entry.at, entry.actor, entry.action, entry.target, entry.appID]
        )
    }

    public func auditEntries(before: String?, limit: Int) async throws -> [AuditEntry] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, at, actor, action, target, app_id FROM audit_log
                    WHERE ? IS NULL OR id < ? ORDER BY id DESC LIMIT ?
                    """,
                arguments: [before, before, limit]
            ).map { row in
                AuditEntry(id: row[0], at: row[1], actor: row[2], action: row[3], target: row[4], appID: row[5])
            }
        }
    }
}
