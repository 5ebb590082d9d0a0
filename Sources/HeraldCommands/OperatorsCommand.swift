import ArgumentParser
import Foundation
import HeraldCrypto
import HeraldRelay
import HeraldStore

/// `herald operators`: the console's operator accounts, in the relay's store.
struct OperatorsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operators",
        abstract: "Add, list and remove the console's operators (viewer or operator).",
        discussion: """
            Accounts are kept in the relay's database (only an Argon2id hash of each password), so \
            this command runs beside running nodes: every node takes a new, replaced or removed \
            operator at its next sign-in, and a removed operator's sessions end at once. A viewer \
            looks; an operator also acts (deactivates devices, starts simulations). Each change is \
            written to the audit log as done by `cli`.
            """,
        subcommands: [Add.self, List.self, Remove.self, Hash.self]
    )

    /// The fewest characters a password given in a file may have.
    static let minimumPasswordLength = 12

    /// Why `name` cannot name an operator, or `nil` when it can.
    static func nameRefusal(_ name: String) -> String? {
        OperatorName.isValid(name)
            ? nil : "an operator's name is 1 to \(OperatorName.maximumLength) of a-z, 0-9, '.', '_' and '-': \(name)"
    }

    /// The password a password file holds: its first line, without its line ending; or why it
    /// is refused.
    static func password(fromFile text: String) -> Result<String, ValidationError> {
        let line = String(text.prefix { !$0.isNewline })
        guard line.count >= minimumPasswordLength else {
            return .failure(
                ValidationError(
                    "the password file's first line has \(line.count) characters: a password needs at least "
                        + "\(minimumPasswordLength)"
                )
            )
        }
        return .success(line)
    }

    /// The password in the file at `path` (its first line), or why it is refused.
    static func password(file path: String) throws -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ValidationError("cannot read the password file \(path)")
        }
        return try password(fromFile: text).get()
    }

    /// The audit action of saving an operator over `existing`, or why it is refused.
    static func saveAction(existing: OperatorRecord?, replace: Bool) -> Result<String, ValidationError> {
        guard let existing else { return .success("operator.added") }
        guard replace else {
            return .failure(
                ValidationError("operator \(existing.name) exists already (--replace gives it a new role and password)")
            )
        }
        return .success("operator.replaced")
    }

    /// An operator's role as a flag names it.
    static func role(_ text: String) throws -> OperatorRole {
        guard let role = OperatorRole(rawValue: text) else {
            let known = OperatorRole.allCases.map(\.rawValue).joined(separator: " or ")
            throw ValidationError("unknown role '\(text)' (\(known))")
        }
        return role
    }
}

extension OperatorsCommand {
    /// `herald operators add`.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add an operator; without --password-file, make a password and print it once."
        )

        @Argument(help: "The operator's name: 1 to 64 of a-z, 0-9, '.', '_' and '-'.")
        var name: String

        @Option(help: "viewer (looks) or operator (also acts).", transform: OperatorsCommand.role)
        var role: OperatorRole

        @Option(help: "A file whose first line is the password (at least 12 characters).")
        var passwordFile: String?

        @Flag(help: "Replace an operator of that name (its role, password and sessions' future sign-ins).")
        var replace = false

        @OptionGroup var store: StoreLocationOptions

        func validate() throws {
            if let refusal = OperatorsCommand.nameRefusal(name) { throw ValidationError(refusal) }
        }

        func run() async throws {
            for line in try await lines() { print(line) }
        }

        /// Does what `run` does and answers the lines it prints.
        func lines() async throws -> [String] {
            let password: String
            if let passwordFile {
                password = try OperatorsCommand.password(file: passwordFile)
            } else {
                password = PasswordHash.generatedPassword()
            }
            let hash = try PasswordHash.hash(password)
            let (name, role, replace) = (name, role, replace)
            let action = try await store.withStore { store, keys in
                let action = try OperatorsCommand.saveAction(
                    existing: try await store.operatorAccount(name: name),
                    replace: replace
                ).get()
                let entry = keys.auditEntry(actor: "cli", action: action, target: name, app: nil)
                let account = OperatorRecord(name: name, role: role, passwordHash: hash, createdAt: entry.at)
                try await store.apply(.saveOperator(account, audit: entry))
                return action
            }
            var lines = ["\(action == "operator.added" ? "added" : "replaced") operator \(name) (\(role.rawValue))"]
            if passwordFile == nil {
                lines += [
                    "password: \(password)",
                    "The password is shown only now (the store keeps its hash): give it to the operator now.",
                ]
            }
            return lines
        }
    }

    /// `herald operators list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the operators: name, role, when added (never their passwords' hashes)."
        )

        @OptionGroup var store: StoreLocationOptions

        func run() async throws {
            for line in try await lines() { print(line) }
        }

        /// The lines `run` prints.
        func lines() async throws -> [String] {
            let accounts = try await store.withStore { store, _ in try await store.operators() }
            guard !accounts.isEmpty else {
                return ["no operators (add one with: herald operators add NAME --role viewer|operator)"]
            }
            return accounts.map { "\($0.name)  \($0.role.rawValue)  created \(KeyListing.time($0.createdAt))" }
        }
    }

    /// `herald operators remove`.
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove",
            abstract: "Remove an operator and end every session it has."
        )

        @Argument(help: "The operator's name (from `herald operators list`).")
        var name: String

        @OptionGroup var store: StoreLocationOptions

        func run() async throws {
            let name = name
            let removed = try await store.withStore { store, keys in
                let entry = keys.auditEntry(actor: "cli", action: "operator.removed", target: name, app: nil)
                return try await store.apply(.deleteOperator(name: name, audit: entry)) == .applied
            }
            guard removed else { throw ValidationError("no operator \(name) (see herald operators list)") }
            print("removed operator \(name); its console sessions ended")
        }
    }

    /// `herald operators hash`: a password's hash for `console.operators` in the configuration
    /// file (an operator the file declares, kept out of the database).
    struct Hash: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "hash",
            abstract: "Print a password's Argon2id hash for console.operators[].password_hash.",
            discussion: """
                Reads the password from the first line of --password-file (at least 12 \
                characters); without it, makes one and prints it once before its hash. Nothing \
                is stored.
                """
        )

        @Option(help: "A file whose first line is the password (at least 12 characters).")
        var passwordFile: String?

        func run() async throws {
            for line in try lines() { print(line) }
        }

        /// The lines `run` prints.
        func lines() throws -> [String] {
            if let passwordFile {
                return [try PasswordHash.hash(try OperatorsCommand.password(file: passwordFile))]
            }
            let password = PasswordHash.generatedPassword()
            return ["password: \(password)", "password_hash: \(try PasswordHash.hash(password))"]
        }
    }
}
