import HeraldHTTPSupport
import Hummingbird
import NIOCore
import Testing

@Suite(.timeLimit(.minutes(1)))
struct BearerTests {
    @Test("the Bearer scheme in any case, spaces around the token dropped; other schemes and empty tokens are none")
    func tokens() {
        #expect(Bearer.token(in: "Bearer abc") == "abc")
        #expect(Bearer.token(in: "bEaReR   abc  ") == "abc")
        #expect(Bearer.token(in: "Basic abc") == nil)
        #expect(Bearer.token(in: "Bearer    ") == nil)
        #expect(Bearer.token(in: "Bearer") == nil)
        #expect(Bearer.token(in: "Bearerabc") == nil)
        #expect(Bearer.token(in: nil) == nil)
    }

    @Test("a secret matches only itself: a prefix, a longer value or one byte off do not")
    func matches() {
        let secret = Array("s3cret-0123456789".utf8)
        #expect(Bearer.matches("Bearer s3cret-0123456789", secret: secret))
        for wrong in ["s3cret-012345678", "s3cret-01234567890", "s3cret-0123456788", "S3cret-0123456789", ""] {
            #expect(!Bearer.matches("Bearer " + wrong, secret: secret))
        }
        #expect(ConstantTime.equal([UInt8](), [UInt8]()))
        #expect(!ConstantTime.equal([1, 2], [1, 2, 3]))
    }

    @Test("error answers are the one JSON body, and a 401 names the Bearer scheme")
    func errors() throws {
        let unauthorized = JSONResponse.error(.unauthorized, "unauthorized", reason: "a key is required")
        #expect(unauthorized.status == .unauthorized)
        #expect(unauthorized.headers[.wwwAuthenticate] == "Bearer")
        #expect(unauthorized.headers[.contentType] == "application/json")
        let invalid = JSONResponse.error(.badRequest, "invalid_field", reason: "'to' is missing", field: "to")
        #expect(invalid.headers[.wwwAuthenticate] == nil)
        let body = try JSONResponse.make(.ok, JSONResponse.ErrorBody(error: "e", reason: "r/s", field: nil))
        #expect(body.status == .ok)
    }
}

@Suite(.timeLimit(.minutes(1)))
struct DuplicateKeyTests {
    @Test(
        "a key given twice in one object is found, with its path",
        arguments: [
            (#"{"to":"a","to":"b"}"#, "to"),
            (#"{"to":"a","from":{"id":"x","name":"y","name":"z"}}"#, "from.name"),
            (#"{"pushes":[{"id":"1"},{"id":"2","id":"3"}]}"#, "pushes[1].id"),
            (#"{"to":"a","\u0074o":"b"}"#, "to"),
            (#"{"a":{"b":[1,{"c":1,"c":2}]}}"#, "a.b[1].c"),
            (#"{"text":"{\"to\":1,\"to\":2}","text":"x"}"#, "text"),
        ]
    )
    func found(json: String, path: String) {
        #expect(DuplicateKeys.first(in: Array(json.utf8)) == path)
    }

    @Test(
        "the same key in different objects, keys inside strings and malformed JSON are not duplicates",
        arguments: [
            #"{"a":{"id":1},"b":{"id":2}}"#,
            #"[{"id":1},{"id":2}]"#,
            #"{"text":"\"to\":1,\"to\":2","to":"x"}"#,
            #"{"a":"b\\","to":"x"}"#,
            #"{"emoji":"\ud83d\ude00","\ud83d\ude00":1}"#,
            #"{"to":"unterminated"#,
            "",
        ]
    )
    func notFound(json: String) {
        #expect(DuplicateKeys.first(in: Array(json.utf8)) == nil)
    }
}
