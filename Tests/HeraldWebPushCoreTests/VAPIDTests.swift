import Crypto
import Foundation
import HeraldEncoding
import Testing

@testable import HeraldWebPushCore

@Suite("VAPID (RFC 8292)", .timeLimit(.minutes(1)))
struct VAPIDTests {
    /// Made by `openssl ecparam -name prime256v1 -genkey -noout`; its public key by
    /// `openssl ec -pubout -outform DER | tail -c 65`.
    static let sec1PEM = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIKcLx2L9Qz8D9DMmNPSEDO6/8dvNPWtxOmo4eZ6816lFoAoGCCqGSM49
        AwEHoUQDQgAEynRTy7SQ1n6oxu9HAVm6Daf8MJX7QKHoExZ0u2rSnu5Hpsm6o5kL
        iNS6tdxio7R5C3rXVAm4NWyJ+V0SKNU3JA==
        -----END EC PRIVATE KEY-----
        """
    static let sec1Public = "BMp0U8u0kNZ-qMbvRwFZug2n_DCV-0Ch6BMWdLtq0p7uR6bJuqOZC4jUurXcYqO0eQt611QJuDVsifldEijVNyQ"

    static let endpoint = "https://push.example.net:8443/wp/abc?x=1"
    static let origin = "https://push.example.net:8443"
    static let now: Int64 = 1_800_000_000

    @Test("a SEC1 key reads, writes PKCS#8, and reads back the same key")
    func keyForms() throws {
        let key = try VAPIDKey(pem: Self.sec1PEM)
        #expect(key.applicationServerKey == Self.sec1Public)
        #expect(key.publicKey.count == 65 && key.publicKey.first == 4)
        #expect(key.pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(try VAPIDKey(pem: key.pem).publicKey == key.publicKey)
        let generated = VAPIDKey.generate()
        #expect(generated.publicKey != key.publicKey)
        #expect(!generated.applicationServerKey.contains("="))
        #expect(throws: WebPushError.self) {
            try VAPIDKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----")
        }
        let error = #expect(throws: WebPushError.self) { try VAPIDKey(pem: "nope") }
        #expect(error?.field == "vapid_key")
    }

    @Test("the header is vapid t=<ES256 JWT>, k=<key>, for the endpoint's origin, 12 hours")
    func authorizationHeader() throws {
        let key = try VAPIDKey(pem: Self.sec1PEM)
        let signer = try VAPIDSigner(key: key, subject: "mailto:ops@example.com")
        let header = try signer.authorization(for: Self.endpoint, now: Self.now)
        #expect(header.hasPrefix("vapid t="))
        #expect(header.hasSuffix(", k=\(Self.sec1Public)"))
        let token = String(header.dropFirst("vapid t=".count).prefix { $0 != "," })
        let jws = try #require(CompactJWS(token))
        let headerJSON = try #require(try JSONSerialization.jsonObject(with: Data(jws.header)) as? [String: String])
        #expect(headerJSON == ["typ": "JWT", "alg": "ES256"])
        let claims = try JSONDecoder().decode(JWTClaims.self, from: Data(jws.claims))
        #expect(claims.aud == Self.origin)
        #expect(claims.exp == Self.now + 12 * 3600)
        #expect(claims.sub == "mailto:ops@example.com")
        let verified = try VAPIDVerifier.verify(
            authorization: header,
            endpointOrigin: Self.origin,
            now: Self.now,
            expectedKey: key.publicKey
        )
        #expect(
            verified
                == VAPIDClaims(
                    aud: Self.origin,
                    exp: Self.now + 43_200,
                    sub: "mailto:ops@example.com",
                    key: key.publicKey,
                    token: token
                )
        )
    }

    @Test("a token is reused for its audience until an hour before it expires")
    func tokenCache() throws {
        let signer = try VAPIDSigner(key: .generate(), subject: "https://example.com/contact")
        let first = try signer.authorization(for: Self.endpoint, now: Self.now)
        #expect(
            try signer.authorization(for: "https://push.example.net:8443/wp/other", now: Self.now + 39_599) == first
        )
        let other = try signer.authorization(for: "https://other.example.net/wp/1", now: Self.now)
        #expect(other != first)
        let renewed = try signer.authorization(for: Self.endpoint, now: Self.now + 39_600)
        #expect(renewed != first)
        #expect(try signer.authorization(for: Self.endpoint, now: Self.now + 39_601) == renewed)
    }

    @Test("a subject must be mailto: or https:")
    func subjects() throws {
        for good in ["mailto:a@b.c", "MAILTO:ops@example.com", "https://example.com", "https://example.com/x"] {
            #expect(throws: Never.self) { try VAPIDSigner(key: .generate(), subject: good) }
        }
        for bad in ["", "mailto:", "http://example.com", "ops@example.com", "https://"] {
            let error = #expect(throws: WebPushError.self) { try VAPIDSigner(key: .generate(), subject: bad) }
            #expect(error?.field == "subject")
        }
        let signer = try VAPIDSigner(key: .generate(), subject: "mailto:a@b.c")
        #expect(throws: WebPushError.self) { try signer.authorization(for: "not a url", now: Self.now) }
    }

    @Test("origins: lowercase, default port dropped, other ports kept, IPv6 bracketed")
    func origins() {
        #expect(WebPushOrigin.of("https://FCM.googleapis.com/fcm/send/x") == "https://fcm.googleapis.com")
        #expect(WebPushOrigin.of("https://a.example:443/x") == "https://a.example")
        #expect(WebPushOrigin.of("https://127.0.0.1:2199/wp/1") == "https://127.0.0.1:2199")
        #expect(WebPushOrigin.of("https://[::1]:8443/wp/1") == "https://[::1]:8443")
        #expect(WebPushOrigin.of("/wp/1") == nil)
    }

    // MARK: - The push service's checks

    static let key = VAPIDKey.generate()

    /// A header with these claims, signed by `signer` (the key itself by default), naming `k`.
    static func header(
        aud: String = origin,
        exp: Int64 = now + 3600,
        sub: String? = "mailto:a@b.c",
        alg: String = "ES256",
        signer: VAPIDKey = key,
        k: String = key.applicationServerKey
    ) -> String {
        var claims = #"{"aud":"\#(aud)","exp":\#(exp)"#
        if let sub { claims += #","sub":"\#(sub)""# }
        claims += "}"
        let token = CompactJWS.sign(header: Array(#"{"typ":"JWT","alg":"\#(alg)"}"#.utf8), claims: Array(claims.utf8)) {
            Array(try! signer.signingKey.signature(for: $0).rawRepresentation)
        }
        return "vapid t=\(token), k=\(k)"
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let authorization: String
        var expectedKey: [UInt8]? = nil
        var mismatch = false
        var testDescription: String { name }
    }

    static let refusals: [Case] = [
        Case(name: "another scheme", authorization: header().replacingOccurrences(of: "vapid ", with: "WebPush ")),
        Case(name: "no t", authorization: "vapid k=\(key.applicationServerKey)"),
        Case(name: "no k", authorization: "vapid t=a.b.c"),
        Case(name: "k not a point", authorization: header(k: Base64URL.encode([4] + Array(repeating: 1, count: 64)))),
        Case(
            name: "k compressed",
            authorization: header(k: Base64URL.encode(Array(key.signingKey.publicKey.compressedRepresentation)))
        ),
        Case(name: "t not a JWS", authorization: "vapid t=nope, k=\(key.applicationServerKey)"),
        Case(name: "signed by another key", authorization: header(signer: .generate())),
        Case(name: "alg HS256", authorization: header(alg: "HS256")),
        Case(name: "aud of another origin", authorization: header(aud: "https://push.example.net")),
        Case(name: "expired", authorization: header(exp: now)),
        Case(name: "exp more than 24 h ahead", authorization: header(exp: now + 86_401)),
        Case(name: "no sub", authorization: header(sub: nil)),
        Case(name: "sub http:", authorization: header(sub: "http://example.com")),
        Case(
            name: "k not the subscription's",
            authorization: header(),
            expectedKey: VAPIDKey.generate().publicKey,
            mismatch: true
        ),
    ]

    @Test("a push service refuses", arguments: refusals)
    func refuses(_ refusal: Case) {
        let error = #expect(throws: WebPushError.self) {
            try VAPIDVerifier.verify(
                authorization: refusal.authorization,
                endpointOrigin: Self.origin,
                now: Self.now,
                expectedKey: refusal.expectedKey
            )
        }
        #expect(error?.field == "authorization")
        #expect(error?.isAuthorization == true)
        #expect(error?.isKeyMismatch == refusal.mismatch)
    }

    @Test(
        "a push service accepts",
        arguments: [
            header(),
            header(exp: now + 86_400),
            header(sub: "https://example.com"),
            header(k: key.applicationServerKey + "="),
            "VAPID  k=\(key.applicationServerKey) , t=" + header().dropFirst("vapid t=".count).prefix { $0 != "," },
        ]
    )
    func accepts(_ authorization: String) throws {
        let claims = try VAPIDVerifier.verify(
            authorization: authorization,
            endpointOrigin: Self.origin,
            now: Self.now,
            expectedKey: Self.key.publicKey
        )
        #expect(claims.aud == Self.origin)
        #expect(claims.key == Self.key.publicKey)
    }
}
