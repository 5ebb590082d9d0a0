import AsyncHTTPClient
import Crypto
import Foundation
import HeraldAPNsCore
import HeraldSandbox
import NIOCore
import NIOHTTP1
import Testing

/// The control API over the network, as `herald sandbox` serves it.
@Suite(.timeLimit(.minutes(2))) struct ControlAPITests {
    struct Reply {
        let status: Int
        let json: [String: Any]
    }

    func call(
        _ sandbox: SandboxHarness,
        _ method: HTTPMethod,
        _ path: String,
        body: String? = nil
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: sandbox.endpoints.controlURL + path)
        request.method = method
        if let body {
            request.body = .bytes(ByteBuffer(string: body))
            request.headers.add(name: "content-type", value: "application/json")
        }
        let response = try await sandbox.client.execute(request, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        let json =
            bytes.readableBytes == 0
            ? [:] : try #require(try JSONSerialization.jsonObject(with: Data(buffer: bytes)) as? [String: Any])
        return Reply(status: Int(response.status.code), json: json)
    }

    @Test func theBannersURLListsEveryDocumentedRoute() async throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/sandbox.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        // Headings such as ### `POST /sandbox/devices` (a WebSocket route has a note after it).
        let documented = Set(
            text.split(separator: "\n").compactMap { line -> String? in
                guard line.hasPrefix("### `"), line.contains(" /sandbox") else { return nil }
                return line.dropFirst(5).split(separator: "`").first.map(String.init)
            }
        )
        try await SandboxHarness.with { sandbox in
            let index = try await call(sandbox, .GET, "/sandbox")
            #expect(index.status == 200)
            let routes = try #require(index.json["routes"] as? [String])
            #expect(Set(routes).union(["GET /sandbox"]) == documented)
        }
    }

    @Test func appsKeysAndDevicesCanBeRegisteredOverHTTP() async throws {
        try await SandboxHarness.with { sandbox in
            #expect(try await call(sandbox, .GET, "/sandbox/health").json["status"] as? String == "ok")
            let app = try await call(
                sandbox,
                .POST,
                "/sandbox/apps",
                body: #"{"bundle_id":"com.acme.app","team_id":"ACMETEAM01"}"#
            )
            #expect(app.status == 201)
            let apps = try await call(sandbox, .GET, "/sandbox/apps")
            let bundles = (apps.json["apps"] as? [[String: Any]])?.compactMap { $0["bundle_id"] as? String }
            #expect(bundles == ["com.acme.app", SandboxHarness.bundleID])

            let key = P256.Signing.PrivateKey()
            let keyBody = try JSONEncoder().encode(
                SandboxKey(keyID: "ACMEKEY001", teamID: "ACMETEAM01", publicKeyPEM: key.publicKey.pemRepresentation)
            )
            #expect(
                try await call(sandbox, .POST, "/sandbox/keys", body: String(decoding: keyBody, as: UTF8.self)).status
                    == 201
            )

            let device = try await call(
                sandbox,
                .POST,
                "/sandbox/devices",
                body: #"{"bundle_id":"com.acme.app","messaging_token_delay_ms":60000}"#
            )
            #expect(device.status == 201)
            let deviceID = try #require(device.json["device_id"] as? String)
            #expect(device.json["messaging_token"] == nil || device.json["messaging_token"] is NSNull)
            #expect((device.json["messaging_token_ready_in_ms"] as? Int ?? 0) > 59_000)
            let voip = try #require(device.json["voip_token"] as? String)
            #expect(voip.count == 64)

            // A push signed with the key registered over HTTP reaches the VoIP token.
            let token = try ProviderTokenSigner(privateKey: key, keyID: "ACMEKEY001", teamID: "ACMETEAM01")
                .makeToken(issuedAt: SandboxHarness.now())
            let client = sandbox.makeClient()
            let push = try await sandbox.push(
                to: voip,
                headers: [
                    ("authorization", "bearer \(token.text)"), ("apns-topic", "com.acme.app.voip"),
                    ("apns-push-type", "voip"),
                ],
                client: client
            )
            #expect(push.status == 200)

            let inspection = try await call(sandbox, .GET, "/sandbox/inspection?token=\(voip)")
            let records = try #require(inspection.json["records"] as? [[String: Any]])
            #expect(records.count == 1)
            #expect(records.first?["push_type"] as? String == "voip")
            #expect(records.first?["status"] as? Int == 200)

            #expect(try await call(sandbox, .POST, "/sandbox/devices/\(deviceID)/uninstall").status == 204)
            #expect(try await call(sandbox, .DELETE, "/sandbox/inspection").status == 204)
            let emptied = try await call(sandbox, .GET, "/sandbox/inspection")
            #expect((emptied.json["records"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func faultsAndLatencyCanBeSetOverHTTP() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            let fault = try await call(
                sandbox,
                .POST,
                "/sandbox/faults",
                body: #"{"status":503,"reason":"ServiceUnavailable","count":1}"#
            )
            #expect(fault.status == 201)
            #expect(try await sandbox.push(to: token).status == 503)
            #expect(try await sandbox.push(to: token).status == 200)

            #expect(
                try await call(sandbox, .POST, "/sandbox/faults", body: #"{"reason":"InternalServerError","count":5}"#)
                    .status == 201
            )
            #expect(try await call(sandbox, .DELETE, "/sandbox/faults").status == 204)
            #expect(try await sandbox.push(to: token).status == 200)

            #expect(try await call(sandbox, .PUT, "/sandbox/faults/latency", body: #"{"ms":100}"#).status == 204)
            let clock = ContinuousClock()
            let start = clock.now
            #expect(try await sandbox.push(to: token).status == 200)
            #expect(clock.now - start >= .milliseconds(100))
        }
    }

    @Test func anOutageClosesEveryAPNsConnectionUntilItEnds() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            #expect(try await sandbox.push(to: token).status == 200)
            let before = Int64(Date().timeIntervalSince1970 * 1000)
            let outage = try await call(sandbox, .POST, "/sandbox/faults/outage", body: #"{"ms":600000}"#)
            #expect(outage.status == 201)
            #expect(outage.json["ms"] as? Int == 600_000)
            let until = try #require(outage.json["until"] as? Int64)
            #expect(until >= before + 600_000 && until <= Int64(Date().timeIntervalSince1970 * 1000) + 600_000)
            #expect(sandbox.sandbox.apnsServer.isUnreachable)
            // The open connection is gone and a new one is closed before TLS: nothing is read.
            await #expect(throws: (any Error).self) { try await sandbox.push(to: token) }
            await #expect(throws: (any Error).self) { try await sandbox.push(to: token) }
            #expect(sandbox.core.inspection().count == 1)
            #expect(try await call(sandbox, .DELETE, "/sandbox/faults").status == 204)
            #expect(!sandbox.sandbox.apnsServer.isUnreachable)
            #expect(try await sandbox.push(to: token).status == 200)
        }
    }

    @Test func badControlRequestsGetAReason() async throws {
        try await SandboxHarness.with { sandbox in
            let cases: [(HTTPMethod, String, String?, Int, String)] = [
                (
                    .POST, "/sandbox/devices", #"{"bundle_id":"com.unknown"}"#, 400,
                    "no app with bundle id 'com.unknown'"
                ),
                (.POST, "/sandbox/devices", #"{"bundle":"x"}"#, 400, "the field 'bundle_id' is missing"),
                (.POST, "/sandbox/devices", "not json", 400, "the body is not valid JSON"),
                (.POST, "/sandbox/devices", nil, 400, "the request needs a JSON body"),
                (
                    .POST, "/sandbox/devices", #"{"bundle_id":"com.example.chat","voip_token_delay_ms":-1}"#, 400,
                    "voip_token_delay_ms"
                ),
                (.GET, "/sandbox/devices/dev-nope", nil, 404, "no device with id 'dev-nope'"),
                (
                    .POST, "/sandbox/keys", #"{"key_id":"K","team_id":"T","public_key_pem":"nope"}"#, 400,
                    "not a P-256 public key"
                ),
                (.POST, "/sandbox/keys/NOPE/revoke", nil, 404, "no provider key"),
                (
                    .POST, "/sandbox/faults", #"{"reason":"NotAReason"}"#, 400,
                    "the field 'reason' has a value that is not allowed"
                ),
                (.POST, "/sandbox/faults", #"{"count":0,"reason":"Shutdown"}"#, 400, "count must be at least 1"),
                (.PUT, "/sandbox/faults/latency", #"{"ms":-3}"#, 400, "ms must be between"),
                (.POST, "/sandbox/faults/outage", #"{"ms":0}"#, 400, "ms must be between 1 and 600000"),
                (.POST, "/sandbox/tokens/abc/expire", nil, 404, "no device token 'abc'"),
                (.GET, "/sandbox/nothing-here", nil, 404, "Not Found"),
                (.GET, "/sandbox/inspection?limit=-1", nil, 400, "limit must be a whole number"),
            ]
            for (method, path, body, status, message) in cases {
                let reply = try await call(sandbox, method, path, body: body)
                #expect(reply.status == status, "\(method) \(path)")
                let error = reply.json["error"] as? String ?? ""
                #expect(error.contains(message), "\(method) \(path): \(error)")
            }
        }
    }
}
