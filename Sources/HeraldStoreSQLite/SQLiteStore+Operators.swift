import GRDB
public import HeraldStore

/// The console's operator accounts and sessions.
extension SQLiteStore {
    /// `StoreChange.saveOperator`, inside the caller's transaction.
    static func saveOperator(_ account: OperatorRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO operators (name, role, password_hash, created_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET role = excluded.role, password_hash = excluded.password_hash,
                    created_at = excluded.created_at
                """,
            arguments: [account.name, account.role.rawValue, account.passwordHash, account.createdAt]
        )
    }

    /// `StoreChange.deleteOperator`, inside the caller's transaction: the account and its sessions.
    static func deleteOperator(name: String, _ db: Database) throws -> ChangeOutcome {
        try db.execute(sql: "DELETE FROM operators WHERE name = ?", arguments: [name])
        guard db.changesCount > 0 else { return .stale }
        try db.execute(sql: "DELETE FROM console_sessions WHERE operator_name = ?", arguments: [name])
        return .applied
    }

    /// `StoreChange.saveConsoleSession`, inside the caller's transaction.
    static func saveConsoleSession(_ session: ConsoleSessionRecord, _ db: Database) throws -> ChangeOutcome {
        try db.execute(
            sql: """
                INSERT INTO console_sessions (id, operator_name, role, created_at, expires_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (id) DO NOTHING
                """,
            arguments: [session.id, session.operatorName, session.role.rawValue, session.createdAt, session.expiresAt]
        )
        return db.changesCount == 1 ? .applied : .duplicate
    }

    public func operators() async throws -> [OperatorRecord] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT \(OperatorRecord.columns) FROM operators ORDER BY name")
                .map { try $0.record(OperatorRecord.self) }
        }
    }

    public func operatorAccount(name: String) async throws -> OperatorRecord? {
        try await readRecord("SELECT \(OperatorRecord.columns) FROM operators WHERE name = ?", [name])
    }

    public func consoleSession(id: String) async throws -> ConsoleSessionRecord? {
        try await readRecord("SELECT \(ConsoleSessionRecord.columns) FROM console_sessions WHERE id = ?", [id])
    }
}
