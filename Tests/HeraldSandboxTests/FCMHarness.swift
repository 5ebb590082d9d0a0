import AsyncHTTPClient
import CryptoExtras
import Foundation
import HeraldFCMCore
import HeraldSandbox
import NIOCore
import NIOHTTP1
import Testing

/// Service accounts for the FCM tests, made once per test process (RSA key generation is slow).
enum FCMFixtures {
    static let project = "herald-test"
    static let otherProject = "other-project"
    static let packageName = "com.example.android"

    static let primary: FCMServiceAccount = makeAccount(project: project)
    static let other: FCMServiceAccount = makeAccount(project: otherProject)

    private static func makeAccount(project: String) -> FCMServiceAccount {
        // The audience only has to end in /token; each test's sandbox has its own port.
        try! FCMServiceAccount.generate(projectID: project, tokenURI: "https://127.0.0.1/token").account
    }

    static func sandboxAccount(_ account: FCMServiceAccount) -> SandboxServiceAccount {
        try! SandboxServiceAccount(account)
    }
}

extension SandboxHarness.Setup {
    /// The default sandbox with the primary service account registered.
    static var fcm: Self {
        Self { $0.serviceAccounts = [FCMFixtures.sandboxAccount(FCMFixtures.primary)] }
    }
}

extension SandboxHarness {
    /// An answer of the FCM listener.
    struct FCMReply {
        let status: Int
        let headers: HTTPHeaders
        let body: String

        var json: [String: Any]? {
            try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        }

        var error: FCMErrorBody? {
            try? JSONDecoder().decode(FCMErrorBody.self, from: Data(body.utf8))
        }

        /// The field the BadRequest detail names.
        var field: String? {
            error?.error.details?.lazy.compactMap { $0.fieldViolations?.first?.field }.first
        }
    }

    /// An Android device of `project` (the primary project by default), its token ready at once.
    func androidDevice(project: String? = FCMFixtures.project) throws -> SandboxDevice {
        try core.registerDevice(bundleID: FCMFixtures.packageName, platform: .android, projectID: project)
    }

    /// `POST /token` with a raw form body.
    func tokenRequest(
        form: String,
        contentType: String = "application/x-www-form-urlencoded"
    ) async throws
        -> FCMReply
    {
        var request = HTTPClientRequest(url: endpoints.tokenURL)
        request.method = .POST
        request.headers.add(name: "content-type", value: contentType)
        request.body = .bytes(ByteBuffer(string: form))
        return try await execute(request)
    }

    /// `POST /token` with an assertion.
    func tokenRequest(assertion: String) async throws -> FCMReply {
        let grant = FCMServiceAccount.jwtBearerGrantType.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        return try await tokenRequest(form: "grant_type=\(grant)&assertion=\(assertion)")
    }

    /// An access token for `account`, through the token endpoint.
    func accessToken(
        for account: FCMServiceAccount = FCMFixtures.primary,
        scope: String = FCMServiceAccount.messagingScope
    ) async throws -> String {
        let assertion = try FCMAssertionSigner(account: account).assertion(issuedAt: Self.now(), scope: scope)
        let reply = try await tokenRequest(assertion: assertion)
        try #require(reply.status == 200, "token endpoint: \(reply.body)")
        return try #require(reply.json?["access_token"] as? String)
    }

    /// `POST /v1/projects/{project}/messages:send`.
    func fcmSend(
        _ body: String,
        project: String = FCMFixtures.project,
        bearer: String?,
        client: HTTPClient? = nil
    ) async throws -> FCMReply {
        var request = HTTPClientRequest(url: endpoints.fcmURL + "/v1/projects/\(project)/messages:send")
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        if let bearer { request.headers.add(name: "authorization", value: "Bearer \(bearer)") }
        request.body = .bytes(ByteBuffer(string: body))
        return try await execute(request, client: client)
    }

    /// A data message to `token`, as JSON.
    static func fcmMessage(
        to token: String,
        data: [String: String] = ["k": "v"],
        android: [String: String]? = nil,
        validateOnly: Bool? = nil
    ) -> String {
        var message: [String: Any] = ["token": token, "data": data]
        if let android { message["android"] = android }
        var body: [String: Any] = ["message": message]
        if let validateOnly { body["validate_only"] = validateOnly }
        let bytes = try! JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A control API call; the answer's JSON (empty for none).
    func control(_ method: HTTPMethod, _ path: String, body: String? = nil) async throws -> (Int, [String: Any]) {
        var request = HTTPClientRequest(url: endpoints.controlURL + path)
        request.method = method
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let reply = try await execute(request)
        return (reply.status, reply.body.isEmpty ? [:] : try #require(reply.json, "\(reply.body)"))
    }

    private func execute(_ request: HTTPClientRequest, client: HTTPClient? = nil) async throws -> FCMReply {
        let response = try await (client ?? self.client).execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return FCMReply(status: Int(response.status.code), headers: response.headers, body: String(buffer: body))
    }
}

/// Hand-made RS256 assertions, for the claims `FCMAssertionSigner` always gets right.
enum AssertionForge {
    static func make(
        key: _RSA.Signing.PrivateKey,
        keyID: String,
        issuer: String,
        audience: String = "https://127.0.0.1/token",
        scope: String = FCMServiceAccount.messagingScope,
        issuedAt: Int64,
        expiresAt: Int64
    ) throws -> String {
        let header = #"{"alg":"RS256","kid":"\#(keyID)","typ":"JWT"}"#
        let claims =
            #"{"aud":"\#(audience)","exp":\#(expiresAt),"iat":\#(issuedAt),"iss":"\#(issuer)","scope":"\#(scope)"}"#
        let input = base64URL(Data(header.utf8)) + "." + base64URL(Data(claims.utf8))
        let signature = try key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + base64URL(signature.rawRepresentation)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

extension AsyncStream<SandboxDeviceEvent>.Iterator {
    /// The next FCM message, skipping token events.
    mutating func nextFCMMessage() async -> SandboxFCMMessage? {
        while let event = await next() {
            if case .fcmMessage(let message) = event { return message }
        }
        return nil
    }
}
