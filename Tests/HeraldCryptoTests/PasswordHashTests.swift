import HeraldCrypto
import Testing

@Suite(.timeLimit(.minutes(1))) struct PasswordHashTests {
    @Test func aHashVerifiesItsPasswordOnly() throws {
        let encoded = try PasswordHash.hash("correct horse battery", strength: .minimum)
        #expect(PasswordHash.isArgon2id(encoded))
        #expect(encoded.hasPrefix("$argon2id$v=19$m=8,t=1,p=1$"))
        #expect(PasswordHash.verify("correct horse battery", against: encoded))
        #expect(!PasswordHash.verify("correct horse batterY", against: encoded))
        #expect(!PasswordHash.verify("", against: encoded))
        #expect(!PasswordHash.verify("correct horse battery ", against: encoded))
    }

    @Test func theDefaultIsLibsodiumsInteractiveStrength() throws {
        let encoded = try PasswordHash.hash("pässwörd with ünïcode")
        #expect(encoded.hasPrefix("$argon2id$v=19$m=65536,t=2,p=1$"))
        #expect(PasswordHash.verify("pässwörd with ünïcode", against: encoded))
        #expect(!PasswordHash.verify("passwoerd with uenicode", against: encoded))
    }

    @Test func twoHashesOfOnePasswordDifferAndBothVerify() throws {
        let first = try PasswordHash.hash("same password", strength: .minimum)
        let second = try PasswordHash.hash("same password", strength: .minimum)
        #expect(first != second)
        #expect(PasswordHash.verify("same password", against: first))
        #expect(PasswordHash.verify("same password", against: second))
    }

    @Test func anEmptyPasswordHashesAndVerifiesOnlyItself() throws {
        let encoded = try PasswordHash.hash("", strength: .minimum)
        #expect(PasswordHash.verify("", against: encoded))
        #expect(!PasswordHash.verify("x", against: encoded))
    }

    @Test func garbageNeverVerifies() throws {
        let encoded = try PasswordHash.hash("secret password", strength: .minimum)
        let garbage = [
            "", "$argon2id$", "$argon2id$v=19$m=8,t=1,p=1$", "not a hash", String(encoded.dropLast(4)),
            encoded + "AAAA", encoded.replacingOccurrences(of: "$argon2id$", with: "$argon2i$"),
            "$argon2id$" + String(repeating: "A", count: 500), "$argon2id$v=19\u{0}" + encoded,
            "$2b$12$abcdefghijklmnopqrstuuKmrJ4jMV1Bqf4W9bH0nYQGg7dYHuZ3K",
        ]
        for text in garbage {
            #expect(!PasswordHash.verify("secret password", against: text), "\(text)")
        }
        #expect(!PasswordHash.isArgon2id("$argon2i$v=19$m=8,t=1,p=1$c2FsdA$aGFzaA"))
        #expect(!PasswordHash.isArgon2id("plain"))
    }
}
