import AsyncHTTPClient
import Crypto
import Foundation
import HeraldEncoding
import HeraldPush
import HeraldSandbox
import HeraldWebPushCore
import HummingbirdWSClient
import Logging
import NIOCore
import NIOHTTP1
import Testing

/// The application server's VAPID keys for the Web Push tests.
enum WebPushFixtures {
    static let appKey = VAPIDKey.generate()
    static let otherKey = VAPIDKey.generate()
    static let subject = "mailto:ops@example.com"
    static let webApp = "https://chat.example.com"
}

/// An emulated browser as its service worker sees it: the sandbox device, its endpoint, and the
/// subscription's private key and auth secret, which never leave the test (the sandbox has only
/// ciphertext).
struct TestBrowser {
    let device: SandboxDevice
    let endpoint: String
    let privateKey: P256.KeyAgreement.PrivateKey
    let keys: WebPushKeys

    /// The plaintext of a body posted to this browser.
    func open(base64 body: String) throws -> String {
        let bytes = try #require(Data(base64Encoded: body))
        let plaintext = try WebPushEncryption.decrypt(Array(bytes), privateKey: privateKey, auth: keys.auth)
        return String(decoding: plaintext, as: UTF8.self)
    }
}

extension SandboxHarness {
    /// An answer of the Web Push listener: status, headers and body, as FCM's are.
    typealias WebPushReply = FCMReply

    /// A browser subscribed with `key`'s application server key; its endpoint ready at once.
    func browser(key: VAPIDKey = WebPushFixtures.appKey) throws -> TestBrowser {
        let device = try core.registerDevice(
            bundleID: WebPushFixtures.webApp,
            platform: .web,
            applicationServerKey: key.applicationServerKey
        )
        let privateKey = P256.KeyAgreement.PrivateKey()
        let auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
        return TestBrowser(
            device: device,
            endpoint: try #require(device.messagingToken),
            privateKey: privateKey,
            keys: try #require(WebPushKeys(p256dh: Array(privateKey.publicKey.x963Representation), auth: auth))
        )
    }

    /// `POST <endpoint>` as a sender does: `plaintext` encrypted for the browser, signed for with
    /// `signer`; `headers` replace the defaults (`TTL: 60`, `Content-Encoding: aes128gcm`, the
    /// VAPID authorization), a nil value removes one. `body` replaces the encrypted plaintext.
    func webPush(
        to browser: TestBrowser,
        plaintext: String = #"{"sealed":"AAEC"}"#,
        body: [UInt8]? = nil,
        headers: [(String, String?)] = [],
        signer: VAPIDSigner? = nil,
        endpoint: String? = nil,
        client: HTTPClient? = nil,
        timeout: TimeAmount = .seconds(10)
    ) async throws -> WebPushReply {
        let endpoint = endpoint ?? browser.endpoint
        let signer = try signer ?? VAPIDSigner(key: WebPushFixtures.appKey, subject: WebPushFixtures.subject)
        var request = HTTPClientRequest(url: endpoint)
        request.method = .POST
        var fields: [(String, String?)] = [
            ("TTL", "60"),
            ("Content-Encoding", "aes128gcm"),
            ("Authorization", try signer.authorization(for: endpoint, now: Self.now())),
        ]
        for (name, value) in headers {
            fields.removeAll { $0.0.lowercased() == name.lowercased() }
            fields.append((name, value))
        }
        for case (let name, let value?) in fields { request.headers.add(name: name, value: value) }
        let bytes = try body ?? WebPushEncryption.encrypt(Array(plaintext.utf8), for: browser.keys)
        request.body = .bytes(ByteBuffer(bytes: bytes))
        let response = try await (client ?? self.client).execute(request, timeout: timeout)
        let reply = try await response.body.collect(upTo: 1 << 16)
        return WebPushReply(status: Int(response.status.code), headers: response.headers, body: String(buffer: reply))
    }

    /// The text frames of a device connection, opened over the control port's WebSocket; the
    /// returned task holds the connection (cancel it to hang up).
    func deviceFrames(deviceID: String) -> (frames: AsyncStream<String>, connection: Task<Void, any Error>) {
        let url =
            endpoints.controlURL.replacingOccurrences(of: "http://", with: "ws://")
            + "/sandbox/devices/\(deviceID)/connect"
        let (frames, continuation) = AsyncStream.makeStream(of: String.self)
        let connection = Task {
            _ = try await WebSocketClient.connect(url: url, logger: Logger(label: "test.ws")) { inbound, _, _ in
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    if case .text(let text) = message { continuation.yield(text) }
                }
                continuation.finish()
            }
        }
        return (frames, connection)
    }
}

extension AsyncStream<SandboxDeviceEvent>.Iterator {
    /// The next Web Push message, skipping token events.
    mutating func nextWebPush() async -> SandboxWebPushMessage? {
        while let event = await next() {
            if case .webPush(let message) = event { return message }
        }
        return nil
    }
}
