import Foundation
import HeraldCrypto
import Testing

@Suite(.timeLimit(.minutes(1))) struct SecretHygieneTests {
    @Test func keysNeverPrintTheirBytes() {
        let secret = SecureBytes(copying: Array("super-secret-key-material-123456".utf8))
        let renderings = [
            "\(secret)", String(describing: secret), String(reflecting: secret), dumped(secret),
            "\(MasterKey.generate())", dumped(Pair().deviceKeys),
        ]
        for text in renderings {
            #expect(!text.contains("super-secret"), "leaked: \(text)")
            #expect(!text.contains("115, 117, 112"), "leaked bytes: \(text)")
        }
        #expect("\(secret)" == "SecureBytes(32 bytes, redacted)")
    }

    @Test func equalityComparesContents() {
        let a = SecureBytes(copying: [1, 2, 3])
        #expect(a == SecureBytes(copying: [1, 2, 3]))
        #expect(a != SecureBytes(copying: [1, 2, 4]))
        #expect(a != SecureBytes(copying: [1, 2]))
        #expect(SecureBytes(copying: []) == SecureBytes(copying: []))
        #expect(SecureBytes.random(count: 32) != SecureBytes.random(count: 32))
    }

    private func dumped(_ value: some Any) -> String {
        var out = ""
        dump(value, to: &out)
        return out
    }
}

@Suite(.timeLimit(.minutes(1))) struct ByteEncodingTests {
    @Test func hexRoundTrips() {
        #expect(ByteEncoding.hex([0x00, 0xAB, 0xFF]) == "00abff")
        #expect(ByteEncoding.bytes(hex: "00ABff") == [0x00, 0xAB, 0xFF])
        #expect(ByteEncoding.bytes(hex: "abc") == nil)
        #expect(ByteEncoding.bytes(hex: "zz") == nil)
        #expect(ByteEncoding.bytes(hex: "") == [])
    }

    @Test func base64URLIsUnpaddedAndStrict() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF, 0x01]
        let text = ByteEncoding.base64URL(bytes)
        #expect(text == "-_-_AQ")
        #expect(ByteEncoding.base64URLLength(forByteCount: bytes.count) == text.count)
        #expect(ByteEncoding.bytes(base64URL: text) == bytes)
        #expect(ByteEncoding.bytes(base64URL: "-_-_AQ==") == nil)
        #expect(ByteEncoding.bytes(base64URL: "+/+/AQ") == nil)
        #expect(ByteEncoding.bytes(base64URL: "-_-_AQ!") == nil)
        #expect(ByteEncoding.base64([0xFB, 0xFF]) == "+/8=")
        #expect(ByteEncoding.bytes(base64: "+/8=") == [0xFB, 0xFF])
    }

    @Test func base64URLLengthMatchesForEveryLength() {
        for count in 0..<100 {
            let text = ByteEncoding.base64URL([UInt8](repeating: 0x5A, count: count))
            #expect(text.utf8.count == ByteEncoding.base64URLLength(forByteCount: count))
        }
    }
}
