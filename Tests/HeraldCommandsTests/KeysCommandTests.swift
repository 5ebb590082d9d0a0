import ArgumentParser
import Crypto
import CryptoExtras
import Foundation
import HeraldCrypto
import HeraldFCMCore
import HeraldSandbox
import HeraldServer
import Testing

@testable import HeraldCommands

@Suite(.timeLimit(.minutes(1))) struct KeysCommandTests {
    let directory = NSTemporaryDirectory() + "herald-keys-\(UUID().uuidString)"

    func run(_ arguments: [String]) async throws {
        var command = try HeraldCommand.parseAsRoot(arguments)
        if var asyncCommand = command as? any AsyncParsableCommand {
            try await asyncCommand.run()
        } else {
            try command.run()
        }
    }

    func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    @Test func masterMakesAnOwnerOnlyKeyAndNeverReplacesIt() async throws {
        let path = directory + "/nested/master.key"
        try await run(["keys", "master", "--out", path])
        #expect(try mode(path) == 0o600)
        let first = try MasterKey.load(path: path)
        let sealed = first.seal(SecureBytes.random(count: 8), context: "c")

        await #expect(throws: HeraldCryptoError.keyFileExists) { try await run(["keys", "master", "--out", path]) }
        #expect(throws: Never.self) { try MasterKey.load(path: path).open(sealed, context: "c") }

        try await run(["keys", "master", "--out", path, "--force"])
        #expect(throws: HeraldCryptoError.authenticationFailed) {
            try MasterKey.load(path: path).open(sealed, context: "c")
        }
    }

    @Test func apnsMakesAnAppleStyleP8KeyWithItsPublicHalf() async throws {
        try await run(["keys", "apns", "--out", directory, "--key-id", "ABC123DEFG", "--team-id", "TEAM123456"])
        let base = directory + "/AuthKey_ABC123DEFG"
        #expect(try mode(base + ".p8") == 0o600)
        let pem = try String(contentsOfFile: base + ".p8", encoding: .utf8)
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let key = try P256.Signing.PrivateKey(pemRepresentation: pem)

        let metadata = try JSONDecoder().decode(
            APNsKeyMetadata.self,
            from: Data(contentsOf: URL(filePath: base + ".json"))
        )
        #expect(metadata.keyID == "ABC123DEFG")
        #expect(metadata.teamID == "TEAM123456")
        let publicKey = try P256.Signing.PublicKey(pemRepresentation: metadata.publicKeyPEM)
        #expect(publicKey.rawRepresentation == key.publicKey.rawRepresentation)
        let publicPEM = try String(contentsOfFile: base + ".pub.pem", encoding: .utf8)
        #expect(
            try P256.Signing.PublicKey(pemRepresentation: publicPEM).rawRepresentation == publicKey.rawRepresentation
        )

        // The key signs ES256 and the public half verifies, as the sandbox will.
        let message = Data("header.claims".utf8)
        let signature = try key.signature(for: message)
        #expect(publicKey.isValidSignature(signature, for: message))

        await #expect(throws: (any Error).self) {
            try await run(["keys", "apns", "--out", directory, "--key-id", "ABC123DEFG", "--team-id", "TEAM123456"])
        }
    }

    @Test func apnsMakesRandomAppleStyleIdentifiersWhenNoneAreGiven() async throws {
        try await run(["keys", "apns", "--out", directory])
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
        let p8 = try #require(files.first { $0.hasSuffix(".p8") })
        let keyID = String(p8.dropFirst("AuthKey_".count).dropLast(".p8".count))
        #expect(AppleIdentifier.isValid(keyID))
    }

    @Test(arguments: ["short", "abc123defg", "ABC123DEF!", "ABC123DEFGH"])
    func apnsRefusesIdentifiersUnlikeApples(identifier: String) {
        #expect(throws: (any Error).self) {
            _ = try HeraldCommand.parseAsRoot(["keys", "apns", "--out", directory, "--key-id", identifier])
        }
        #expect(throws: (any Error).self) {
            _ = try HeraldCommand.parseAsRoot(["keys", "apns", "--out", directory, "--team-id", identifier])
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct FCMKeysCommandTests {
    let directory = NSTemporaryDirectory() + "herald-fcm-keys-\(UUID().uuidString)"

    @Test func fcmMakesAServiceAccountAndItsPublicRegistration() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var command = try HeraldCommand.parseAsRoot(["keys", "fcm", "--out", directory, "--project", "demo-project"])
        guard var fcm = command as? any AsyncParsableCommand else {
            Issue.record("keys fcm is not a command")
            return
        }
        try await fcm.run()
        let accountPath = directory + "/fcm-service-account.json"
        let publicPath = directory + "/fcm-service-account.pub.json"
        let modes = try [accountPath, publicPath].map {
            try #require(FileManager.default.attributesOfItem(atPath: $0)[.posixPermissions] as? Int)
        }
        #expect(modes == [0o600, 0o644])
        let account = try FCMServiceAccount.load(path: accountPath)
        #expect(account.projectID == "demo-project" && account.tokenURI == "https://127.0.0.1:2196/token")
        let registration = try JSONDecoder().decode(
            SandboxServiceAccount.self,
            from: Data(contentsOf: URL(filePath: publicPath))
        )
        #expect(registration.privateKeyID == account.privateKeyID && registration.clientEmail == account.clientEmail)
        #expect(!(try String(contentsOfFile: publicPath, encoding: .utf8)).contains("PRIVATE KEY"))
        // What the account signs, the registered public key verifies: the sandbox's check.
        let assertion = try #require(FCMAssertion(try FCMAssertionSigner(account: account).assertion(issuedAt: 1)))
        #expect(assertion.isSigned(by: try _RSA.Signing.PublicKey(pemRepresentation: registration.publicKeyPEM)))

        command = try HeraldCommand.parseAsRoot(["keys", "fcm", "--out", directory])
        fcm = try #require(command as? any AsyncParsableCommand)
        await #expect(throws: (any Error).self) { try await fcm.run() }  // never replaced without --force
        #expect(throws: (any Error).self) { try HeraldCommand.parseAsRoot(["keys", "fcm", "--project", "No_Such"]) }
    }
}
