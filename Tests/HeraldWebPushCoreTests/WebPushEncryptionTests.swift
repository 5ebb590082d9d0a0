import Crypto
import HeraldEncoding
import HeraldPush
import Testing

@testable import HeraldWebPushCore

@Suite("Web Push encryption (RFC 8291)", .timeLimit(.minutes(1)))
struct WebPushEncryptionTests {
    /// RFC 8291 Appendix A, its line breaks removed.
    enum RFC8291 {
        static let plaintext = "V2hlbiBJIGdyb3cgdXAsIEkgd2FudCB0byBiZSBhIHdhdGVybWVsb24"
        static let senderPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
        static let senderPublic =
            "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
        static let userAgentPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        static let userAgentPublic =
            "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
        static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
        static let body =
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEq"
            + "KK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
    }

    static func bytes(_ text: String) -> [UInt8] { Base64URL.decode(Substring(text))! }

    static let keys = WebPushKeys(p256dh: bytes(RFC8291.userAgentPublic), auth: bytes(RFC8291.auth))!
    static let userAgentKey = try! P256.KeyAgreement.PrivateKey(rawRepresentation: bytes(RFC8291.userAgentPrivate))

    @Test("the sender's side reproduces Appendix A's body byte for byte")
    func encryptsTheRFCVector() throws {
        let sender = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.bytes(RFC8291.senderPrivate))
        #expect(Array(sender.publicKey.x963Representation) == Self.bytes(RFC8291.senderPublic))
        let body = try WebPushEncryption.encrypt(
            Self.bytes(RFC8291.plaintext),
            for: Self.keys,
            salt: Self.bytes(RFC8291.salt),
            senderKey: sender
        )
        #expect(Base64URL.encode(body) == RFC8291.body)
    }

    @Test("the browser's side recovers Appendix A's plaintext")
    func decryptsTheRFCVector() throws {
        let plaintext = try WebPushEncryption.decrypt(
            Self.bytes(RFC8291.body),
            privateKey: Self.userAgentKey,
            auth: Self.bytes(RFC8291.auth)
        )
        #expect(String(decoding: plaintext, as: UTF8.self) == "When I grow up, I want to be a watermelon")
    }

    @Test("the largest plaintext makes exactly 4,096 bytes; one byte more is refused")
    func largestPlaintextFillsTheBody() throws {
        let plaintext = (0..<WebPushPayload.maxPlaintext).map { UInt8(truncatingIfNeeded: $0) }
        let body = try WebPushEncryption.encrypt(plaintext, for: Self.keys)
        #expect(body.count == 4096)
        let back = try WebPushEncryption.decrypt(body, privateKey: Self.userAgentKey, auth: Self.keys.auth)
        #expect(back == plaintext)
        #expect(throws: WebPushError.self) { try WebPushEncryption.encrypt(plaintext + [0], for: Self.keys) }
        #expect(throws: WebPushError.self) { try WebPushEncryption.encrypt([1, 2, 3], for: Self.keys, recordSize: 19) }
    }

    @Test("random salts and sender keys: two bodies of one plaintext differ, both decrypt")
    func freshKeysPerBody() throws {
        let first = try WebPushEncryption.encrypt(Array("hi".utf8), for: Self.keys)
        let second = try WebPushEncryption.encrypt(Array("hi".utf8), for: Self.keys)
        #expect(first != second)
        #expect(first.count == 86 + 2 + 1 + 16)
        for body in [first, second] {
            #expect(
                try WebPushEncryption.decrypt(body, privateKey: Self.userAgentKey, auth: Self.keys.auth) == [104, 105]
            )
        }
    }

    /// A body the browser must refuse, and why.
    struct Refusal: CustomTestStringConvertible, Sendable {
        let name: String
        let body: @Sendable () throws -> [UInt8]
        var testDescription: String { name }
    }

    static let sender = P256.KeyAgreement.PrivateKey()
    static func sealed(_ record: [UInt8], recordSize: UInt32 = 4096) throws -> [UInt8] {
        try WebPushEncryption.seal(
            record: record,
            for: keys,
            recordSize: recordSize,
            salt: Array(repeating: 7, count: 16),
            senderKey: sender
        )
    }
    static let good = try! sealed(Array("hello".utf8) + [2])

    static let refusals: [Refusal] = [
        Refusal(name: "shorter than the header") { Array(good.prefix(85)) },
        Refusal(name: "a key id length of 64") {
            var b = good
            b[20] = 64
            return b
        },
        Refusal(name: "a key id that is no point") {
            var b = good
            b[22] ^= 1
            return b
        },
        Refusal(name: "a record size of 17") {
            var b = good
            b[16...19] = [0, 0, 0, 17]
            return b
        },
        Refusal(name: "a record longer than the record size") {
            try sealed(Array(repeating: 1, count: 30) + [2], recordSize: 40)
        },
        Refusal(name: "a tag that does not verify") {
            var b = good
            b[b.count - 1] ^= 1
            return b
        },
        Refusal(name: "a changed ciphertext byte") {
            var b = good
            b[86] ^= 1
            return b
        },
        Refusal(name: "a record without its tag") { Array(good.prefix(86 + 10)) },
        Refusal(name: "no delimiter (a second record would follow)") { try sealed(Array("hello".utf8) + [1]) },
        Refusal(name: "only padding") { try sealed([0, 0, 0]) },
        Refusal(name: "a delimiter followed by non-zero padding") { try sealed(Array("hi".utf8) + [2, 0, 5]) },
    ]

    @Test("the browser refuses", arguments: refusals)
    func refuses(_ refusal: Refusal) throws {
        let body = try refusal.body()
        #expect(throws: WebPushError.self) {
            try WebPushEncryption.decrypt(body, privateKey: Self.userAgentKey, auth: Self.keys.auth)
        }
        // The same body untouched, or with its padding as RFC 8188 allows, is taken: the cases
        // above fail for their change alone.
        #expect(
            try WebPushEncryption.decrypt(Self.good, privateKey: Self.userAgentKey, auth: Self.keys.auth)
                == Array("hello".utf8)
        )
        #expect(
            try WebPushEncryption.decrypt(
                try Self.sealed(Array("hi".utf8) + [2, 0, 0]),
                privateKey: Self.userAgentKey,
                auth: Self.keys.auth
            ) == Array("hi".utf8)
        )
    }

    @Test("another subscription's keys cannot decrypt")
    func wrongKeys() throws {
        let body = try WebPushEncryption.encrypt(Array("secret".utf8), for: Self.keys)
        #expect(throws: WebPushError.self) {
            try WebPushEncryption.decrypt(body, privateKey: P256.KeyAgreement.PrivateKey(), auth: Self.keys.auth)
        }
        #expect(throws: WebPushError.self) {
            try WebPushEncryption.decrypt(body, privateKey: Self.userAgentKey, auth: Array(repeating: 0, count: 16))
        }
    }
}
