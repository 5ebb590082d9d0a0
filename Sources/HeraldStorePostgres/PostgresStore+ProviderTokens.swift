public import HeraldStore
import NIOCore
import PostgresNIO

extension PostgresStore {
    public func providerToken(teamID: String, keyID: String) async throws -> ProviderTokenRecord? {
        try await rows(
            "read a provider token",
            """
            SELECT version, sealed_token, issued_at FROM provider_tokens
            WHERE team_id = \(teamID) AND key_id = \(keyID)
            """
        ).first.map { try Self.providerToken(from: $0, teamID: teamID, keyID: keyID) }
    }

    package func replaceProviderToken(_ replacement: ProviderTokenReplacement) async throws -> ProviderTokenSwap {
        let (teamID, keyID, sealedToken) = (replacement.teamID, replacement.keyID, replacement.sealedToken)
        let (issuedAt, version) = (replacement.issuedAt, replacement.replacing)
        return try await transaction("replace a provider token") { [logger] connection -> ProviderTokenSwap in
            // One statement decides: a writer racing on the same version waits for the other's
            // row (or its insert) and then finds the version moved on (or the key taken), so one
            // wins. Read committed: the read after a lost write sees the winner's commit.
            let written: [PostgresRow]
            if let version {
                written = try await connection.run(
                    """
                    UPDATE provider_tokens SET version = version + 1, sealed_token = \(ByteBuffer(sealedToken)),
                        issued_at = \(issuedAt)
                    WHERE team_id = \(teamID) AND key_id = \(keyID) AND version = \(version)
                    RETURNING version
                    """,
                    logger: logger
                )
            } else {
                written = try await connection.run(
                    """
                    INSERT INTO provider_tokens (team_id, key_id, version, sealed_token, issued_at)
                    VALUES (\(teamID), \(keyID), 1, \(ByteBuffer(sealedToken)), \(issuedAt))
                    ON CONFLICT (team_id, key_id) DO NOTHING
                    RETURNING version
                    """,
                    logger: logger
                )
            }
            if let row = written.first {
                return .replaced(
                    ProviderTokenRecord(
                        teamID: teamID,
                        keyID: keyID,
                        version: try row.decode(Int64.self),
                        sealedToken: sealedToken,
                        issuedAt: issuedAt
                    )
                )
            }
            let current = try await connection.run(
                """
                SELECT version, sealed_token, issued_at FROM provider_tokens
                WHERE team_id = \(teamID) AND key_id = \(keyID)
                """,
                logger: logger
            ).first
            return .lost(current: try current.map { try Self.providerToken(from: $0, teamID: teamID, keyID: keyID) })
        }
    }

    static func providerToken(from row: PostgresRow, teamID: String, keyID: String) throws -> ProviderTokenRecord {
        var columns = Columns(row)
        return ProviderTokenRecord(
            teamID: teamID,
            keyID: keyID,
            version: try columns.next(),
            sealedToken: try columns.bytes(),
            issuedAt: try columns.next()
        )
    }
}
