import AsyncHTTPClient
import Crypto
import Foundation
import HeraldAPNsCore
import HeraldSandbox
import HeraldSimulation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization
import Testing

/// One sandbox on loopback (ephemeral ports, real TLS), with a registered app, team and key, and
/// an HTTP/2 client that trusts its CA: what every end-to-end test starts from.
final class SandboxHarness: Sendable {
    static let bundleID = "com.example.chat"
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"

    /// The TLS files, made once per test process.
    static var tls: SandboxTLS { HeraldTestStack.tls }

    let sandbox: Sandbox
    let endpoints: SandboxEndpoints
    let signer: ProviderTokenSigner
    let client: HTTPClient
    let token: ProviderToken
    /// Clients a test made; all are shut down when the test ends, even when it fails (a client
    /// dropped without shutdown stops the whole test process).
    private let extraClients = Mutex<[HTTPClient]>([])

    private init(sandbox: Sandbox, endpoints: SandboxEndpoints, signer: ProviderTokenSigner, client: HTTPClient) throws
    {
        self.sandbox = sandbox
        self.endpoints = endpoints
        self.signer = signer
        self.client = client
        token = try signer.makeToken(issuedAt: Self.now())
    }

    var core: SandboxCore { sandbox.core }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    static func key() -> (P256.Signing.PrivateKey, SandboxKey) {
        let key = P256.Signing.PrivateKey()
        return (key, SandboxKey(keyID: keyID, teamID: teamID, publicKeyPEM: key.publicKey.pemRepresentation))
    }

    /// Runs `body` against a fresh sandbox, then shuts it down gracefully.
    /// A change to the default test configuration.
    struct Setup {
        let apply: (inout SandboxConfiguration) -> Void

        init(_ apply: @escaping (inout SandboxConfiguration) -> Void) {
            self.apply = apply
        }
    }

    static func with(
        _ setup: Setup = Setup { _ in },
        _ body: (SandboxHarness) async throws -> Void
    ) async throws {
        var options = HeraldTestStack.Options(fcmAccount: FCMFixtures.primary)
        options.bundleID = bundleID
        options.teamID = teamID
        options.keyID = keyID
        options.apns = nil
        options.fcm = nil
        options.sandbox = { configuration in
            // The sandbox tests register what they need themselves.
            configuration.serviceAccounts = []
            setup.apply(&configuration)
        }
        try await HeraldTestStack.with(options) { stack in
            var clientConfiguration = HTTPClient.Configuration()
            var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
            tlsConfiguration.trustRoots = .file(stack.endpoints.caCertificatePath)
            clientConfiguration.tlsConfiguration = tlsConfiguration
            clientConfiguration.httpVersion = .automatic
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
            let harness = try SandboxHarness(
                sandbox: stack.sandbox,
                endpoints: stack.endpoints,
                signer: stack.signer,
                client: client
            )
            do {
                try await body(harness)
            } catch {
                await harness.shutDownExtraClients()
                try? await client.shutdown()
                throw error
            }
            await harness.shutDownExtraClients()
            try await client.shutdown()
        }
    }

    /// A device registered for the test app, with both tokens available at once.
    func device() throws -> SandboxDevice {
        try core.registerDevice(bundleID: Self.bundleID)
    }

    struct Reply {
        let status: Int
        let headers: HTTPHeaders
        let body: String

        var reason: String? {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["reason"] as? String
        }

        var timestamp: Int64? {
            ((try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["timestamp"] as? NSNumber)?
                .int64Value
        }
    }

    /// Sends a push; `headers` replace the defaults (a valid token, the app's topic, an alert).
    func push(
        to deviceToken: String,
        payload: String = #"{"aps":{"alert":"hello"}}"#,
        headers: [(String, String?)] = [],
        method: HTTPMethod = .POST,
        path: String? = nil,
        client: HTTPClient? = nil
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: endpoints.apnsURL + (path ?? "/3/device/\(deviceToken)"))
        request.method = method
        var fields: [(String, String?)] = [
            ("authorization", "bearer \(token.text)"),
            ("apns-topic", Self.bundleID),
            ("apns-push-type", "alert"),
        ]
        for (name, value) in headers {
            fields.removeAll { $0.0 == name }
            fields.append((name, value))
        }
        for case (let name, let value?) in fields { request.headers.add(name: name, value: value) }
        if !payload.isEmpty { request.body = .bytes(ByteBuffer(string: payload)) }
        let response = try await (client ?? self.client).execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 16)
        return Reply(status: Int(response.status.code), headers: response.headers, body: String(buffer: body))
    }

    /// One push handled in-process (no network): for rules about time, where the network's
    /// jitter under a loaded test run would blur what is measured.
    func handle(
        to deviceToken: String,
        token: String? = nil,
        expiration: Int64? = nil,
        connection: inout SandboxConnectionState
    ) -> SandboxAPNsResponse? {
        var request = SandboxAPNsRequest()
        request.expiration = expiration.map(String.init)
        request.method = "POST"
        request.path = "/3/device/\(deviceToken)"
        request.authorization = "bearer \(token ?? self.token.text)"
        request.topic = Self.bundleID
        request.body = Array(#"{"aps":{}}"#.utf8)
        guard case .respond(let response, _) = core.handle(request, connection: &connection) else { return nil }
        return response
    }

    /// A second HTTP/2 client (a second connection) that trusts the sandbox.
    func makeClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(endpoints.caCertificatePath)
        configuration.tlsConfiguration = tls
        configuration.httpVersion = .automatic
        return track(HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration))
    }

    /// Shuts `client` down when the test ends.
    func track(_ client: HTTPClient) -> HTTPClient {
        extraClients.withLock { $0.append(client) }
        return client
    }

    private func shutDownExtraClients() async {
        for client in extraClients.withLock({ $0 }) { try? await client.shutdown() }
    }
}

extension AsyncStream<SandboxDeviceEvent>.Iterator {
    /// The next notification, skipping token events. (One iterator per stream: dropping an
    /// iterator ends an AsyncStream, so tests keep theirs.)
    mutating func nextNotification() async -> SandboxNotification? {
        while let event = await next() {
            if case .notification(let notification) = event { return notification }
        }
        return nil
    }
}
