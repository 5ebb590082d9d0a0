public import HeraldStore
import Logging
import PostgresNIO

/// The console's operator accounts and sessions, as on SQLite.
extension PostgresStore {
    /// `StoreChange.saveOperator`, inside the caller's transaction.
    static func saveOperator(_ account: OperatorRecord, on connection: PostgresConnection, logger: Logger) async throws
    {
        try await connection.run(
            """
            INSERT INTO operators (name, role, password_hash, created_at)
            VALUES (\(account.name), \(account.role.rawValue), \(account.passwordHash), \(account.createdAt))
            ON CONFLICT (name) DO UPDATE SET role = excluded.role, password_hash = excluded.password_hash,
                created_at = excluded.created_at
            """,
            logger: logger
        )
    }

    /// `StoreChange.deleteOperator`, inside the caller's transaction: the account and its sessions.
    static func deleteOperator(
        name: String,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        let deleted = try await connection.run(
            "DELETE FROM operators WHERE name = \(name) RETURNING name",
            logger: logger
        )
        guard !deleted.isEmpty else { return .stale }
        try await connection.run("DELETE FROM console_sessions WHERE operator_name = \(name)", logger: logger)
        return .applied
    }

    /// `StoreChange.saveConsoleSession`, inside the caller's transaction.
    static func saveConsoleSession(
        _ session: ConsoleSessionRecord,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        let inserted = try await connection.run(
            """
            INSERT INTO console_sessions (id, operator_name, role, created_at, expires_at)
            VALUES (\(session.id), \(session.operatorName), \(session.role.rawValue), \(session.createdAt),
                \(session.expiresAt))
            ON CONFLICT (id) DO NOTHING
            RETURNING id
            """,
            logger: logger
        )
        return inserted.isEmpty ? .duplicate : .applied
    }

    /// `StoreChange.deleteConsoleSession`, inside the caller's transaction.
    static func deleteConsoleSession(
        id: String,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        let deleted = try await connection.run(
            "DELETE FROM console_sessions WHERE id = \(id) RETURNING id",
            logger: logger
        )
        return deleted.isEmpty ? .stale : .applied
    }

    /// `StoreChange.deleteExpiredConsoleSessions`, inside the caller's transaction.
    static func deleteExpiredConsoleSessions(
        before: Int64,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        try await connection.run("DELETE FROM console_sessions WHERE expires_at < \(before)", logger: logger)
    }

    public func operators() async throws -> [OperatorRecord] {
        try await rows(
            "read the operators",
            "SELECT \(unescaped: OperatorRecord.columns) FROM operators ORDER BY name COLLATE \"C\""
        ).map { try $0.record(OperatorRecord.self) }
    }

    public func operatorAccount(name: String) async throws -> OperatorRecord? {
        try await rows(
            "read an operator",
            "SELECT \(unescaped: OperatorRecord.columns) FROM operators WHERE name = \(name)"
        ).first.map { try $0.record(OperatorRecord.self) }
    }

    public func consoleSession(id: String) async throws -> ConsoleSessionRecord? {
        try await rows(
            "read a console session",
            "SELECT \(unescaped: ConsoleSessionRecord.columns) FROM console_sessions WHERE id = \(id)"
        ).first.map { try $0.record(ConsoleSessionRecord.self) }
    }
}
