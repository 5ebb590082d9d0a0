import Foundation
import HeraldCrypto
import Testing

@Suite(.timeLimit(.minutes(1))) struct MasterKeyTests {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "herald-master-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    @Test func sealedSecretsOpenOnlyWithTheSameKeyAndContext() throws {
        let key = MasterKey.generate()
        let secret = SecureBytes.random(count: 32)
        let sealed = key.seal(secret, context: "device:1:relay_sk")
        #expect(try key.open(sealed, context: "device:1:relay_sk") == secret)
        #expect(throws: HeraldCryptoError.authenticationFailed) { try key.open(sealed, context: "device:2:relay_sk") }
        #expect(throws: HeraldCryptoError.authenticationFailed) {
            try MasterKey.generate().open(sealed, context: "device:1:relay_sk")
        }
        var tampered = sealed
        tampered[tampered.count - 1] ^= 1
        #expect(throws: HeraldCryptoError.authenticationFailed) { try key.open(tampered, context: "device:1:relay_sk") }
        #expect(throws: HeraldCryptoError.tooShort) { try key.open(Array(sealed.prefix(20)), context: "x") }
        #expect(throws: HeraldCryptoError.emptyInput) { try key.open([], context: "x") }
    }

    @Test func writtenFilesAreOwnerOnlyAndLoad() throws {
        let path = directory + "/master.key"
        let key = MasterKey.generate()
        try key.write(to: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect((attributes[.size] as? Int) == 32)
        let loaded = try MasterKey.load(path: path)
        let secret = SecureBytes.random(count: 16)
        #expect(try loaded.open(key.seal(secret, context: "c"), context: "c") == secret)
    }

    @Test func anExistingKeyIsNotReplacedUnlessAsked() throws {
        let path = directory + "/master.key"
        let first = MasterKey.generate()
        try first.write(to: path)
        #expect(throws: HeraldCryptoError.keyFileExists) { try MasterKey.generate().write(to: path) }
        let sealed = first.seal(SecureBytes.random(count: 8), context: "c")
        #expect(throws: Never.self) { try MasterKey.load(path: path).open(sealed, context: "c") }
        try MasterKey.generate().write(to: path, overwrite: true)
        #expect(throws: HeraldCryptoError.authenticationFailed) {
            try MasterKey.load(path: path).open(sealed, context: "c")
        }
    }

    @Test func filesReadableByOthersAreRefused() throws {
        let path = directory + "/master.key"
        try MasterKey.generate().write(to: path)
        for mode in [0o644, 0o640, 0o604, 0o660] {
            chmod(path, mode_t(mode))
            #expect(throws: HeraldCryptoError.keyFileInsecure) { try MasterKey.load(path: path) }
        }
    }

    @Test func missingAndMalformedFilesAreRefused() throws {
        #expect(throws: HeraldCryptoError.keyFileMissing) { try MasterKey.load(path: directory + "/nope") }
        let path = directory + "/bad.key"
        for contents in [Data(), Data(repeating: 1, count: 31), Data("not a key at all\n".utf8), Data(count: 500)] {
            FileManager.default.createFile(atPath: path, contents: contents, attributes: [.posixPermissions: 0o600])
            #expect(throws: HeraldCryptoError.keyFileInvalid) { try MasterKey.load(path: path) }
        }
    }

    @Test func base64FilesAndTheEnvironmentVariableAreAccepted() throws {
        let key = MasterKey.generate()
        let text = key.base64Representation()
        let path = directory + "/b64.key"
        FileManager.default.createFile(
            atPath: path,
            contents: Data((text + "\n").utf8),
            attributes: [.posixPermissions: 0o600]
        )
        let secret = SecureBytes.random(count: 8)
        let sealed = key.seal(secret, context: "c")
        #expect(try MasterKey.load(path: path).open(sealed, context: "c") == secret)
        let fromEnvironment = try MasterKey.resolve(environment: ["HERALD_MASTER_KEY": text], path: "/nonexistent")
        #expect(try fromEnvironment.open(sealed, context: "c") == secret)
        #expect(throws: HeraldCryptoError.keyFileInvalid) {
            try MasterKey.resolve(environment: ["HERALD_MASTER_KEY": "c2hvcnQ="], path: "/nonexistent")
        }
        #expect(throws: HeraldCryptoError.keyFileMissing) {
            try MasterKey.resolve(environment: [:], path: "/nonexistent")
        }
    }
}
