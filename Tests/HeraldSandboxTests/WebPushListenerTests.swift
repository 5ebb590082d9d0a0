import AsyncHTTPClient
import Foundation
import HeraldEncoding
import HeraldPush
import HeraldSandbox
import HeraldWebPushCore
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

/// The Web Push listener's answers over real HTTPS on loopback, one rule at a time.
@Suite(.timeLimit(.minutes(2))) struct WebPushListenerTests {
    @Test func anAcceptedPushGets201WithItsLocationAndIsRecordedAsCiphertext() async throws {
        try await SandboxHarness.with { sandbox in
            let browser = try sandbox.browser()
            #expect(browser.device.platform == .web)
            #expect(browser.endpoint.hasPrefix(sandbox.endpoints.webPushURL + "/wp/"))
            #expect(sandbox.endpoints.webPushURL == sandbox.core.webPushEndpointBase)
            let body = try WebPushEncryption.encrypt(Array("hello".utf8), for: browser.keys)
            let reply = try await sandbox.webPush(
                to: browser,
                body: body,
                headers: [("Urgency", "high"), ("Topic", "chat-1")]
            )
            #expect(reply.status == 201)
            let location = try #require(reply.headers.first(name: "location"))
            #expect(location.hasPrefix(sandbox.endpoints.webPushURL + "/m/"))
            #expect(reply.headers.first(name: "ttl") == "60")

            let record = try #require(sandbox.core.webPushInspection(endpoint: browser.endpoint).last)
            #expect(record.status == 201)
            #expect(record.outcome == "accepted")
            #expect(record.delivery == "stored")
            #expect(record.location == location)
            #expect(record.endpointID == String(browser.endpoint.split(separator: "/").last!))
            #expect(
                record.headers == ["ttl": "60", "urgency": "high", "topic": "chat-1", "content-encoding": "aes128gcm"]
            )
            let vapid = try #require(record.vapid)
            #expect(vapid.k == WebPushFixtures.appKey.applicationServerKey)
            #expect(vapid.aud == sandbox.endpoints.webPushURL)
            #expect(vapid.sub == WebPushFixtures.subject)
            #expect(vapid.exp > SandboxHarness.now() + 11 * 3600)
            #expect(record.bodySize == body.count)
            // The body as sent, which only the browser opens: nothing in clear.
            #expect(record.body == Data(body).base64EncodedString())
            #expect(try browser.open(base64: try #require(record.body)) == "hello")
        }
    }

    @Test func http1ClientsArePushedForToo() async throws {
        try await SandboxHarness.with { sandbox in
            let browser = try sandbox.browser()
            var configuration = HTTPClient.Configuration()
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(sandbox.endpoints.caCertificatePath)
            configuration.tlsConfiguration = tls
            configuration.httpVersion = .http1Only
            let client = sandbox.track(HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration))
            #expect(try await sandbox.webPush(to: browser, client: client).status == 201)
        }
    }

    /// A request the push service refuses: the change from a good request, the status, and
    /// words of the error's message.
    struct Refusal: CustomTestStringConvertible, Sendable {
        let name: String
        let status: Int
        let words: String
        var headers: [(String, String?)] = []
        var body: [UInt8]? = nil
        var signer: VAPIDSigner? = nil
        var endpoint: (@Sendable (String) -> String)? = nil
        /// The `Authorization` header for the endpoint, when not the signer's.
        var authorize: (@Sendable (String) throws -> String)? = nil
        var testDescription: String { name }
    }

    static let appSigner = try! VAPIDSigner(key: WebPushFixtures.appKey, subject: WebPushFixtures.subject)

    static let otherSigner = try! VAPIDSigner(key: WebPushFixtures.otherKey, subject: WebPushFixtures.subject)
    static let aesgcmBody = Array(repeating: UInt8(1), count: 200)

    static let refusals: [Refusal] = [
        Refusal(name: "an unknown subscription", status: 404, words: "No such subscription", endpoint: { $0 + "x" }),
        Refusal(name: "no TTL", status: 400, words: "Missing TTL", headers: [("TTL", nil)]),
        Refusal(name: "a TTL that is no number", status: 400, words: "Invalid TTL", headers: [("TTL", "1h")]),
        Refusal(name: "a negative TTL", status: 400, words: "Invalid TTL", headers: [("TTL", "-1")]),
        Refusal(name: "an unknown Urgency", status: 400, words: "Invalid Urgency", headers: [("Urgency", "urgent")]),
        Refusal(
            name: "a Topic too long",
            status: 400,
            words: "Invalid Topic",
            headers: [("Topic", String(repeating: "t", count: 33))]
        ),
        Refusal(name: "a Topic outside base64url", status: 400, words: "Invalid Topic", headers: [("Topic", "a.b")]),
        Refusal(
            name: "Content-Encoding aesgcm",
            status: 400,
            words: "Content-Encoding",
            headers: [("Content-Encoding", "aesgcm")]
        ),
        Refusal(
            name: "no Content-Encoding",
            status: 400,
            words: "Content-Encoding",
            headers: [("Content-Encoding", nil)]
        ),
        Refusal(name: "a body with no aes128gcm header", status: 400, words: "aes128gcm body", body: aesgcmBody),
        Refusal(name: "no Authorization", status: 401, words: "Missing VAPID", headers: [("Authorization", nil)]),
        Refusal(name: "a Bearer token", status: 401, words: "scheme", headers: [("Authorization", "Bearer abc")]),
        Refusal(
            name: "a token for another origin",
            status: 401,
            words: "origin",
            authorize: { _ in
                try appSigner.authorization(for: "https://push.example.net/wp/1", now: SandboxHarness.now())
            }
        ),
        Refusal(
            name: "an expired token",
            status: 401,
            words: "expired",
            authorize: { try appSigner.authorization(for: $0, now: SandboxHarness.now() - 13 * 3600) }
        ),
        Refusal(
            name: "another application server key",
            status: 403,
            words: "application server key",
            signer: otherSigner
        ),
        Refusal(
            name: "a body over 4096 bytes",
            status: 413,
            words: "too large",
            body: Array(repeating: 1, count: 4097)
        ),
    ]

    @Test(arguments: refusals)
    func aPushIsRefused(_ refusal: Refusal) async throws {
        try await SandboxHarness.with { sandbox in
            let browser = try sandbox.browser()
            var headers = refusal.headers
            if let authorize = refusal.authorize { headers.append(("Authorization", try authorize(browser.endpoint))) }
            let reply = try await sandbox.webPush(
                to: browser,
                body: refusal.body,
                headers: headers,
                signer: refusal.signer,
                endpoint: refusal.endpoint?(browser.endpoint)
            )
            #expect(reply.status == refusal.status, "\(reply.body)")
            #expect(reply.json?["code"] as? Int == refusal.status)
            let message = try #require(reply.json?["message"] as? String)
            #expect(message.contains(refusal.words), "\(message)")
            let record = try #require(sandbox.core.webPushInspection().last)
            #expect(record.status == refusal.status)
            #expect(record.outcome == "rejected")
            #expect(record.delivery == nil)
            // The token's claims are recorded once its signature verified, a 403's too.
            #expect((record.vapid != nil) == (refusal.status == 403 || refusal.status == 400 || refusal.status == 413))
            // The same browser still takes a good push: each refusal is for its change alone.
            #expect(try await sandbox.webPush(to: browser).status == 201)
        }
    }

    @Test func anUnsubscribedOrExpiredSubscriptionGets410() async throws {
        try await SandboxHarness.with { sandbox in
            let uninstalled = try sandbox.browser()
            try sandbox.core.uninstall(deviceID: uninstalled.device.deviceID)
            let reply = try await sandbox.webPush(to: uninstalled)
            #expect(reply.status == 410)
            #expect(reply.json?["error"] as? String == "Gone")

            let expired = try sandbox.browser()
            // Over the control API, by the id at the end of the endpoint.
            let id = String(expired.endpoint.split(separator: "/").last!)
            let (status, _) = try await sandbox.control(.POST, "/sandbox/tokens/\(id)/expire")
            #expect(status == 204)
            #expect(try await sandbox.webPush(to: expired).status == 410)
            // A push without a payload needs no Content-Encoding, and is still refused 410.
            #expect(
                try await sandbox.webPush(to: expired, body: [], headers: [("Content-Encoding", nil)]).status == 410
            )
        }
    }

    @Test func otherPathsAndMethodsGetJSONErrors() async throws {
        try await SandboxHarness.with { sandbox in
            let browser = try sandbox.browser()
            for (method, path, status) in [(HTTPMethod.GET, "/wp/x", 404), (.POST, "/nope", 404)] {
                var request = HTTPClientRequest(url: sandbox.endpoints.webPushURL + path)
                request.method = method
                let response = try await sandbox.client.execute(request, timeout: .seconds(10))
                let body = try await response.body.collect(upTo: 1 << 16)
                #expect(Int(response.status.code) == status)
                let json = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
                #expect(json?["code"] as? Int == status)
            }
            // Nothing of these reached the rules.
            #expect(sandbox.core.webPushInspection().isEmpty)
            #expect(try await sandbox.webPush(to: browser).status == 201)
        }
    }

    @Test func aPushWithoutPayloadIsTaken() async throws {
        try await SandboxHarness.with { sandbox in
            let browser = try sandbox.browser()
            let reply = try await sandbox.webPush(to: browser, body: [], headers: [("Content-Encoding", nil)])
            #expect(reply.status == 201)
            #expect(sandbox.core.webPushInspection().last?.bodySize == 0)
        }
    }
}
