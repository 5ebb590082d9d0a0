import HeraldMacros

/// The console's operator accounts and their signed-in sessions.
///
/// An account keeps its password's Argon2id encoded hash (`PasswordHash`), never the password;
/// a session is kept under the digest of its cookie's secret, never the secret, so a copy of the
/// database signs nobody in. Accounts and sessions live in the store so that every node on it
/// takes a sign-in, a sign-out or a removed account at its next request. Written through
/// `ChangeStore.apply` (`saveOperator`, `deleteOperator`, `saveConsoleSession`,
/// `deleteConsoleSession`, `deleteExpiredConsoleSessions`).
public protocol OperatorStore: Sendable {
    /// Every operator account, by name.
    func operators() async throws -> [OperatorRecord]
    /// The account named `name`, or `nil`.
    func operatorAccount(name: String) async throws -> OperatorRecord?
    /// The session kept under `id` (the digest of its cookie's secret), or `nil`; an expired one
    /// too, until `deleteExpiredConsoleSessions` removes it: the caller compares `expiresAt` with
    /// its clock.
    func consoleSession(id: String) async throws -> ConsoleSessionRecord?
}

/// One operator account of the console.
@MemberwiseInit
public struct OperatorRecord: Sendable, Hashable {
    /// What the operator signs in with (`OperatorName.isValid`).
    public var name: String
    public var role: OperatorRole
    /// The password's Argon2id encoded hash (`$argon2id$…`), never the password.
    public var passwordHash: String
    /// Milliseconds since the epoch.
    public var createdAt: Int64
}

/// One signed-in console session.
@MemberwiseInit
public struct ConsoleSessionRecord: Sendable, Hashable {
    /// The hex digest of the cookie's secret, never the secret.
    public var id: String
    public var operatorName: String
    /// The role the operator had when signing in.
    public var role: OperatorRole
    /// Milliseconds since the epoch.
    public var createdAt: Int64
    /// When it ends, milliseconds since the epoch.
    public var expiresAt: Int64
}

extension ChangeStore {
    /// Adds or replaces an operator account (by name), with the audit entry that records it.
    public func saveOperator(_ account: OperatorRecord, audit: AuditEntry? = nil) async throws {
        try await apply(.saveOperator(account, audit: audit))
    }

    /// Removes an operator account and its sessions, with the audit entry that records it;
    /// whether there was such an account.
    public func deleteOperator(name: String, audit: AuditEntry? = nil) async throws -> Bool {
        try await apply(.deleteOperator(name: name, audit: audit)) == .applied
    }
}
