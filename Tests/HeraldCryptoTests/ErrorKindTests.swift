import HeraldCrypto
import HeraldDomain
import Testing

@Suite(.timeLimit(.minutes(1)))
struct ErrorKindTests {
    enum Code: Hashable, Sendable { case first, second }

    @Test(
        "two kinds are equal and hash alike when their codes are, whatever their words",
        arguments: [
            (ErrorKind(Code.first, "a"), ErrorKind(Code.first, "b"), true),
            (ErrorKind(Code.first, "a"), ErrorKind(Code.first, "a"), true),
            (ErrorKind(Code.first, "a"), ErrorKind(Code.second, "a"), false),
        ]
    )
    func equality(lhs: ErrorKind<Code>, rhs: ErrorKind<Code>, equal: Bool) {
        #expect((lhs == rhs) == equal)
        #expect((Set([lhs, rhs]).count == 1) == equal)
    }

    @Test("an error struct built on it compares by kind and keeps its words")
    func errorStruct() {
        let detailed = HeraldCryptoError.keyFileIO.with(detail: "cannot read /tmp/key: EACCES")
        #expect(detailed == .keyFileIO)
        #expect(detailed != .keyFileMissing)
        #expect(detailed.detail == "cannot read /tmp/key: EACCES")
        #expect(detailed.description == detailed.detail)
        #expect(detailed.identifier == "keyFileIO")
    }
}
