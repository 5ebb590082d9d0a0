import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    public func providerToken(teamID: String, keyID: String) async throws -> ProviderTokenRecord? {
        try await read { db in try Self.providerToken(db, teamID: teamID, keyID: keyID) }
    }

    package func replaceProviderToken(_ replacement: ProviderTokenReplacement) async throws -> ProviderTokenSwap {
        let (teamID, keyID, sealedToken) = (replacement.teamID, replacement.keyID, replacement.sealedToken)
        let (issuedAt, version) = (replacement.issuedAt, replacement.replacing)
        // The writer is single: the read and the write below see no other writer in between.
        return try await write { db -> ProviderTokenSwap in
            let current = try Self.providerToken(db, teamID: teamID, keyID: keyID)
            guard current?.version == version else { return .lost(current: current) }
            let record = ProviderTokenRecord(
                teamID: teamID,
                keyID: keyID,
                version: (version ?? 0) + 1,
                sealedToken: sealedToken,
                issuedAt: issuedAt
            )
            try db.execute(
                sql: """
                    INSERT INTO provider_tokens (team_id, key_id, version, sealed_token, issued_at)
                    VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (team_id, key_id) DO UPDATE SET version = excluded.version,
                        sealed_token = excluded.sealed_token, issued_at = excluded.issued_at
                    """,
                arguments: [teamID, keyID, record.version, Data(sealedToken), issuedAt]
            )
            return .replaced(record)
        }
    }

    private static func providerToken(_ db: Database, teamID: String, keyID: String) throws -> ProviderTokenRecord? {
        guard
            let row = try Row.fetchOne(
                db,
                sql: "SELECT version, sealed_token, issued_at FROM provider_tokens WHERE team_id = ? AND key_id = ?",
                arguments: [teamID, keyID]
            )
        else { return nil }
        let sealed: Data = row[1]
        return ProviderTokenRecord(
            teamID: teamID,
            keyID: keyID,
            version: row[0],
            sealedToken: Array(sealed),
            issuedAt: row[2]
        )
    }
}
