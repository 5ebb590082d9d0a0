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
