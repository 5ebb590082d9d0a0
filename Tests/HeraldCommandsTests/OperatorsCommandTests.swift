import ArgumentParser
import Foundation
import HeraldCrypto
import HeraldStore
import Testing

@testable import HeraldCommands

@Suite(.timeLimit(.minutes(1))) struct OperatorsCommandTests {
    let directory = NSTemporaryDirectory() + "herald-operators-\(UUID().uuidString)"

    /// `herald operators <Command> arguments --data <directory>`, parsed.
    func command<Command: ParsableCommand>(_: Command.Type, _ arguments: [String]) throws -> Command {
        let name = try #require(Command.configuration.commandName)
        return try #require(
            try HeraldCommand.parseAsRoot(["operators", name] + arguments + ["--data", directory]) as? Command
        )
    }

    /// What the store holds, read as the command reads it.
    func stored() async throws -> (operators: [OperatorRecord], audit: [AuditEntry]) {
        try await StoreLocationOptions.parse(["--data", directory]).withStore { store, _ in
            (try await store.operators(), try await store.auditEntries(before: nil, limit: 10))
        }
    }

    @Test func addListReplaceAndRemoveAgainstASQLiteStore() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Made: a password printed once, its hash stored and verifying it.
        let made = try await command(OperatorsCommand.Add.self, ["ann", "--role", "operator"]).lines()
        #expect(made.first == "added operator ann (operator)")
        let password = String(try #require(made.first { $0.hasPrefix("password: ") }).dropFirst("password: ".count))
        #expect(password.count == 24)
        #expect(made.last?.contains("shown only now") == true)
        var (operators, audit) = try await stored()
        let ann = try #require(operators.first)
        #expect(operators.map(\.name) == ["ann"] && ann.role == .operator)
        #expect(PasswordHash.isArgon2id(ann.passwordHash) && PasswordHash.verify(password, against: ann.passwordHash))
        #expect(audit.map { [$0.actor, $0.action, $0.target] } == [["cli", "operator.added", "ann"]])

        // From a file: its first line; the name taken is refused without --replace.
        let file = directory + "/password.txt"
        try "a long enough passphrase\nsecond line\n".write(toFile: file, atomically: true, encoding: .utf8)
        let added = try await command(OperatorsCommand.Add.self, ["bob", "--role", "viewer", "--password-file", file])
            .lines()
        #expect(added == ["added operator bob (viewer)"])
        await #expect(throws: ValidationError.self) {
            _ = try await command(OperatorsCommand.Add.self, ["bob", "--role", "operator", "--password-file", file])
                .lines()
        }
        try "another passphrase\r\n".write(toFile: file, atomically: true, encoding: .utf8)
        let replaced = try await command(
            OperatorsCommand.Add.self,
            ["bob", "--role", "operator", "--password-file", file, "--replace"]
        ).lines()
        #expect(replaced == ["replaced operator bob (operator)"])
        (operators, audit) = try await stored()
        let bob = try #require(operators.last)
        #expect(operators.map(\.name) == ["ann", "bob"] && bob.role == .operator)
        #expect(PasswordHash.verify("another passphrase", against: bob.passwordHash))
        #expect(!PasswordHash.verify("a long enough passphrase", against: bob.passwordHash))

        // Listed without hashes.
        let listed = try await command(OperatorsCommand.List.self, []).lines()
        #expect(listed.count == 2 && listed[0].hasPrefix("ann  operator  created ") && listed[1].hasPrefix("bob  "))
        #expect(!listed.joined().contains("$argon2id$"))

        // Removed with its sessions; removing it again is refused.
        let session = ConsoleSessionRecord(
            id: "s1",
            operatorName: "bob",
            role: .operator,
            createdAt: 1,
            expiresAt: .max
        )
        let saved = try await StoreLocationOptions.parse(["--data", directory]).withStore { store, _ in
            try await store.apply(.saveConsoleSession(session))
        }
        #expect(saved == .applied)
        try await command(OperatorsCommand.Remove.self, ["bob"]).run()
        await #expect(throws: ValidationError.self) { try await command(OperatorsCommand.Remove.self, ["bob"]).run() }
        (operators, audit) = try await stored()
        #expect(operators.map(\.name) == ["ann"])
        #expect(
            audit.map { [$0.actor, $0.action, $0.target] } == [
                ["cli", "operator.removed", "bob"], ["cli", "operator.replaced", "bob"],
                ["cli", "operator.added", "bob"],
                ["cli", "operator.added", "ann"],
            ]
        )
        let gone = try await StoreLocationOptions.parse(["--data", directory]).withStore { store, _ in
            try await store.consoleSession(id: "s1")
        }
        #expect(gone == nil)
        #expect(try await command(OperatorsCommand.List.self, []).lines().count == 1)
    }

    @Test func aShortPasswordFileIsRefusedAndNothingIsAdded() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/short.txt"
        try "elevenchars\nand a much longer second line\n".write(toFile: file, atomically: true, encoding: .utf8)
        await #expect {
            _ = try await command(OperatorsCommand.Add.self, ["ann", "--role", "viewer", "--password-file", file])
                .lines()
        } throws: { error in
            (error as? ValidationError)?.message.contains("has 11 characters: a password needs at least 12") == true
        }
        #expect(try await stored().operators.isEmpty)
    }

    @Test(arguments: ["", "Ann", "ann smith", "ann@example", "é", String(repeating: "a", count: 65)])
    func namesOutsideTheAlphabetAreRefused(name: String) {
        #expect(throws: (any Error).self) {
            _ = try HeraldCommand.parseAsRoot(["operators", "add", name, "--role", "viewer"])
        }
    }

    @Test func unknownRolesAreRefused() {
        #expect(throws: (any Error).self) {
            _ = try HeraldCommand.parseAsRoot(["operators", "add", "ann", "--role", "admin"])
        }
        #expect(throws: Never.self) {
            _ = try HeraldCommand.parseAsRoot([
                "operators", "add", String(repeating: "a", count: 64), "--role", "viewer",
            ])
        }
    }

    @Test func passwordFilesGiveTheirFirstLine() throws {
        #expect(try OperatorsCommand.password(fromFile: "twelve chars\nmore").get() == "twelve chars")
        #expect(try OperatorsCommand.password(fromFile: "twelve chars\r\n").get() == "twelve chars")
        #expect(throws: ValidationError.self) { try OperatorsCommand.password(fromFile: "").get() }
        #expect(throws: ValidationError.self) { try OperatorsCommand.password(fromFile: "\ntwelve chars").get() }
        #expect(PasswordHash.generatedPassword() != PasswordHash.generatedPassword())
    }

    @Test func hashesVerifyAgainstTheirPassword() throws {
        let file = NSTemporaryDirectory() + "herald-operators-hash-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: file) }
        try "a long enough password\n".write(toFile: file, atomically: true, encoding: .utf8)
        let lines = try OperatorsCommand.Hash.parse(["--password-file", file]).lines()
        #expect(lines.count == 1 && PasswordHash.isArgon2id(lines[0]))
        #expect(PasswordHash.verify("a long enough password", against: lines[0]))
        let made = try OperatorsCommand.Hash.parse([]).lines()
        let password = try #require(made.first?.split(separator: " ").last.map(String.init))
        let hash = try #require(made.last?.split(separator: " ").last.map(String.init))
        #expect(PasswordHash.verify(password, against: hash))
    }
}
