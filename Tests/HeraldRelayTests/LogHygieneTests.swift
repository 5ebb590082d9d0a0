import Foundation
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import Logging
import Synchronization
import Testing

/// Every log record of the loggers it makes, kept as text for a test to search.
final class LogCapture: Sendable {
    private let records = Mutex<[String]>([])

    /// A logger at trace level whose records land here.
    func logger(label: String) -> Logger {
        var logger = Logger(label: label) { label in Handler(capture: self, label: label) }
        logger.logLevel = .trace
        return logger
    }

    /// The records so far, one per line: level, label, message, metadata, error.
    var text: String { records.withLock { $0.joined(separator: "\n") } }
    var count: Int { records.withLock { $0.count } }

    fileprivate func append(_ record: String) { records.withLock { $0.append(record) } }

    private struct Handler: LogHandler {
        let capture: LogCapture
        let label: String
        var metadata: Logger.Metadata = [:]
        var metadataProvider: Logger.MetadataProvider?
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var all = metadata
            if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
            if let own = event.metadata { all.merge(own) { _, new in new } }
            let error = event.error.map { " error=\(String(reflecting: $0))" } ?? ""
            capture.append("\(event.level) \(label) \(event.message) \(all)\(error)")
        }
    }
}

/// docs/relay.md, "Secrets": none of them, and no message text, is ever logged; checked at trace
/// level, where the most is written.
@Suite("Secrets stay out of the logs", .timeLimit(.minutes(2)))
struct LogHygieneTests {
    /// The ways a key could be written: hex, base64, base64url.
    static func spellings(_ bytes: [UInt8]) -> [String] {
        let base64 = Data(bytes).base64EncodedString()
        let base64URL = base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return [ByteEncoding.hex(bytes), base64, base64URL]
    }

    @Test("a full flow logged at trace level: no message text, names, API key, credential, master or session key")
    func noSecretsInTraceLogs() async throws {
        let capture = LogCapture()
        var setup = RelayHarness.Setup()
        setup.logger = capture.logger(label: "test.relay")
        try await RelayHarness.with(setup) { harness in
            let text = "Refund 4711 approved for the blue sofa"
            let sender = "Dana Quillfeather"
            let caller = "Ravi Okonkwo-Laine"
            let phone = try await harness.phone(user: "u1")
            let android = try await harness.androidPhone(user: "u1")

            // A message to an iPhone and an Android phone, delivered, read back by id; a call;
            // the live channel with its credential in the query; a key rotation.
            let receipt = try await harness.call(
                .POST,
                "/v1/messages",
                body: #"{"to":"u1","from":{"id":"agent-7","name":"\#(sender)"},"conversation":"c-1","text":"\#(text)"}"#
            ).decode(IngestReceipt.self)
            #expect(receipt.pushes.count == 2)
            for push in receipt.pushes { try await harness.push(push.pushID, reaches: .delivered) }
            let fetched = try await harness.call(.GET, "/v1/messages/\(receipt.id)", auth: .bearer(phone.credential))
            #expect(fetched.status == 200 && fetched.text.contains(text))
            let call = try await harness.call(
                .POST,
                "/v1/calls",
                body: #"{"to":"u1","from":{"id":"agent-7","name":"\#(caller)"},"call_id":"call-1"}"#
            ).decode(IngestReceipt.self)
            #expect(call.pushes.count == 2)
            for push in call.pushes { try await harness.push(push.pushID, reaches: .delivered) }
            let client = try await LiveChannelTests.activeChannel(harness, phone)
            let live = try await harness.call(
                .POST,
                "/v1/messages",
                body:
                    #"{"to":"u1","from":{"id":"agent-7","name":"\#(sender)"},"conversation":"c-1","text":"\#(text) live"}"#
            ).decode(IngestReceipt.self)
            var frames = client.received.makeAsyncIterator()
            #expect(try #require(await LiveClient.next(&frames))["message_id"] as? String == live.id)
            client.close()
            await client.ended
            let rotation = try await harness.call(
                .POST,
                "/v1/activations",
                auth: .bearer(phone.credential),
                json: ActivationRequest(
                    userID: "u1",
                    app: RelayHarness.bundleID,
                    platform: .ios,
                    publicKey: KeyPair.generate().publicKey.base64,
                    deviceID: phone.deviceID
                )
            )
            #expect(rotation.status == 201)
            let rotated = try rotation.decode(ActivationResponse.self)

            let session = try phone.sessionKeys()
            let masterKey = try #require(Data(base64Encoded: harness.masterKey.base64Representation()))
            var secrets: [(String, String)] = [
                ("message text", text), ("sender name", sender), ("caller name", caller),
                ("API key", RelayHarness.apiKey), ("device credential", phone.credential),
                ("rotated credential", rotated.deviceCredential),
                ("credential secret", String(phone.credential.split(separator: ".").last ?? "")),
                ("master key", harness.masterKey.base64Representation()),
                ("android credential", android.credential),
            ]
            // The FCM service account's RSA key, by the lines of its PEM.
            secrets += RelayHarness.fcmAccount.account.privateKey.split(separator: "\n")
                .filter { !$0.hasPrefix("-----") && $0.count > 16 }
                .map { ("FCM service account key", String($0)) }
            for (name, bytes) in [
                ("master key", Array(masterKey)), ("session receive key", session.receive.copyBytes()),
                ("session transmit key", session.transmit.copyBytes()),
                ("device secret key", phone.keys.secretKey.copyBytes()),
            ] {
                secrets += Self.spellings(bytes).map { (name, $0) }
            }

            let logs = capture.text
            // The capture works: the flow did log, at trace and debug too.
            #expect(capture.count > 20)
            #expect(logs.contains("device activated") && logs.contains(phone.deviceID))
            #expect(logs.split(separator: "\n").contains { $0.hasPrefix("trace ") })
            // WebSocket frames are logged at trace as their first bytes in spaced hex.
            for (name, value) in [("message text", text), ("sender name", sender)] {
                secrets.append(
                    (
                        name + " as frame bytes",
                        Array(value.utf8.prefix(12)).map { ByteEncoding.hex([$0]) }.joined(separator: " ")
                    )
                )
            }
            for (name, secret) in secrets {
                #expect(!logs.contains(secret), "the \(name) is in the logs")
            }
        }
    }
}
