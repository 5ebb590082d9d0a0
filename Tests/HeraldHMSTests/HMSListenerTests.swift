import AsyncHTTPClient
import Foundation
import HeraldHMSCore
import HeraldSandbox
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

/// The sandbox's Push Kit listener and its control routes, over the wire: HTTP/2 and HTTP/1.1 on
/// the sandbox's CA, and the JSON answers of `/sandbox/hms/…`.
@Suite("Push Kit listener and control routes", .serialized, .timeLimit(.minutes(2)))
struct HMSListenerTests {
    /// Runs `body` with an HTTP client trusting `ca`, shut down afterwards whatever happens.
    private static func withClient(
        _ version: HTTPClient.Configuration.HTTPVersion = .automatic,
        ca: String,
        _ body: (HTTPClient) async throws -> Void
    ) async throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(ca)
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = version
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let outcome = await Result(catching: { try await body(http) })
        try await http.shutdown()
        try outcome.get()
    }

    private static func call(
        _ http: HTTPClient,
        _ method: HTTPMethod,
        _ url: String,
        body: String? = nil,
        headers: [(String, String)] = []
    ) async throws -> (status: Int, body: String, version: HTTPVersion) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await http.execute(request, timeout: .seconds(10))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        return (Int(response.status.code), text, response.version)
    }

    @Test("the token endpoint and messages:send answer over HTTP/2 and HTTP/1.1 alike")
    func bothVersions() async throws {
        try await HMSHarness.with { harness in
            let token = try harness.device().token
            for version in [HTTPClient.Configuration.HTTPVersion.automatic, .http1Only] {
                try await Self.withClient(version, ca: harness.endpoints.caCertificatePath) { http in
                    let grant = try await Self.call(
                        http,
                        .POST,
                        harness.endpoints.hmsTokenURL,
                        body:
                            "grant_type=client_credentials&client_id=\(HMSHarness.appID)&client_secret=\(HMSHarness.secret)",
                        headers: [("content-type", "application/x-www-form-urlencoded")]
                    )
                    #expect(grant.status == 200)
                    #expect(grant.version.major == (version == .http1Only ? 1 : 2))
                    let access = try #require(try HMSTokenAnswer.decode(Data(grant.body.utf8)).accessToken)
                    let sent = try await Self.call(
                        http,
                        .POST,
                        "\(harness.endpoints.hmsURL)/v1/\(HMSHarness.appID)/messages:send",
                        body: #"{"message":{"data":"{}","token":["\#(token)"]}}"#,
                        headers: [("authorization", "Bearer " + access)]
                    )
                    #expect(sent.status == 200)
                    #expect(
                        try JSONDecoder().decode(HMSSendAnswer.self, from: Data(sent.body.utf8)).resultCode == .success
                    )
                }
            }
        }
    }

    @Test("an unknown path is a JSON answer in Push Kit's shape, not an empty page")
    func unknownPath() async throws {
        try await HMSHarness.with { harness in
            try await Self.withClient(ca: harness.endpoints.caCertificatePath) { http in
                let reply = try await Self.call(http, .GET, "\(harness.endpoints.hmsURL)/v2/nothing")
                #expect(reply.status == 404)
                let answer = try JSONDecoder().decode(HMSSendAnswer.self, from: Data(reply.body.utf8))
                #expect(answer.resultCode == .invalidParameters && answer.msg.contains("/v2/nothing"))
            }
        }
    }

    @Test("control routes: apps without their secrets, faults checked, tokens expired, the log read and cleared")
    func controlRoutes() async throws {
        try await HMSHarness.with { harness in
            try await Self.withClient(ca: harness.endpoints.caCertificatePath) { http in
                // Before a second app: with one, a device needs no project_id.
                let token = try harness.device().token
                let control = harness.endpoints.controlURL + "/sandbox/hms"
                let added = try await Self.call(
                    http,
                    .POST,
                    control + "/apps",
                    body: #"{"app_id":"300","client_secret":"a-very-secret-value"}"#
                )
                #expect(added.status == 201 && !added.body.contains("a-very-secret-value"))
                let apps = try await Self.call(http, .GET, control + "/apps")
                #expect(apps.body == #"{"app_ids":["104857600","300"]}"#)
                let missing = try await Self.call(http, .POST, control + "/apps", body: #"{"app_id":"301"}"#)
                #expect(missing.status == 400 && missing.body.contains("client_secret"))
                let badFault = try await Self.call(
                    http,
                    .POST,
                    control + "/faults",
                    body: #"{"kind":"flow_control","count":0}"#
                )
                #expect(badFault.status == 400 && badFault.body.contains("count"))
                let fault = try await Self.call(http, .POST, control + "/faults", body: #"{"kind":"internal_error"}"#)
                #expect(fault.status == 201)
                // The client's first send meets the fault, its retry goes through.
                #expect(await harness.client.send(harness.push(to: token)).isDelivered)
                #expect(try await Self.call(http, .POST, control + "/access-tokens/expire").status == 204)
                let log = try await Self.call(http, .GET, control + "/inspection?limit=2")
                let object = try #require(try JSONSerialization.jsonObject(with: Data(log.body.utf8)) as? [String: Any])
                #expect(object["access_token_grants"] as? Int == 1)
                let records = try #require(object["records"] as? [[String: Any]])
                #expect(records.map { $0["status"] as? Int } == [500, 200])
                #expect(records.map { $0["outcome"] as? String } == ["injected", "accepted"])
                #expect(try await Self.call(http, .DELETE, control + "/inspection").status == 204)
                #expect(harness.core.hmsInspection().isEmpty)
            }
        }
    }
}
