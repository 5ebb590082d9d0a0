import HeraldEncoding
import Testing

@Suite(.timeLimit(.minutes(1)))
struct CompactJWSTests {
    @Test("signing joins the encoded header and claims, and signs exactly those bytes")
    func signs() {
        var signed: [UInt8] = []
        let text = CompactJWS.sign(header: Array(#"{"alg":"none"}"#.utf8), claims: Array(#"{"a":1}"#.utf8)) {
            signed = $0
            return [1, 2, 3]
        }
        #expect(text == "eyJhbGciOiJub25lIn0.eyJhIjoxfQ.AQID")
        #expect(String(decoding: signed, as: UTF8.self) == "eyJhbGciOiJub25lIn0.eyJhIjoxfQ")
    }

    @Test("parsing gives back the parts and the signing input of a signed text")
    func roundTrip() throws {
        let text = CompactJWS.sign(header: Array("h".utf8), claims: Array("c".utf8)) { _ in [9] }
        let jws = try #require(CompactJWS(text))
        #expect(jws.header == Array("h".utf8))
        #expect(jws.claims == Array("c".utf8))
        #expect(jws.signature == [9])
        #expect(jws.signingInput == Array(text.split(separator: ".").prefix(2).joined(separator: ".").utf8))
        #expect(CompactJWS(text[...]) == jws)
    }

    @Test(
        "anything but three parts of strict base64url is refused",
        arguments: ["", "a.b", "a.b.c.d", "aGk.aGk", "aGk.aGk.aGk=", "aGk.a+k.aGk", "aGk..aGk.", "aGk.aGk.a"]
    )
    func refuses(text: String) {
        #expect(CompactJWS(text) == nil)
    }

    @Test("empty parts are three parts: an unsigned token's empty signature reads as no bytes")
    func emptyParts() throws {
        let jws = try #require(CompactJWS(".."))
        #expect(jws.header.isEmpty && jws.claims.isEmpty && jws.signature.isEmpty)
        #expect(jws.signingInput == Array(".".utf8))
    }
}
