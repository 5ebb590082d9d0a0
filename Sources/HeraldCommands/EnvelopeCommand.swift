import ArgumentParser
import Foundation
import HeraldCrypto

/// `herald envelope`: look inside the envelope format.
struct EnvelopeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "envelope",
        abstract: "Seal and open envelopes: a key-agreement demo and an opener for test vectors.",
        subcommands: [Demo.self, Open.self]
    )
}

extension EnvelopeCommand {
    /// `herald envelope demo`: a whole activation and two pushes, in one process.
    struct Demo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "demo",
            abstract: "Agree keys between a device and the relay, seal a message and a call, open them.",
            discussion: "Everything printed is made fresh; no key bytes are printed, only public keys and key ids."
        )

        @Option(help: "The message text to seal.")
        var text: String = "Your order #1234 has shipped and will arrive on Tuesday."

        @Option(help: "The sender's display name.")
        var sender: String = "Ada (Support)"

        func run() async throws {
            let clock = ContinuousClock()
            let start = clock.now
            let device = KeyPair.generate()
            let relay = KeyPair.generate()
            let relayKeys = try KeyExchange.relaySessionKeys(relay: relay, device: device.publicKey)
            let deviceKeys = try KeyExchange.deviceSessionKeys(device: device, relay: relay.publicKey)
            print("activation")
            print("  device public key  \(device.publicKey.base64)")
            print("  relay public key   \(relay.publicKey.base64)")
            print("  key id             \(relayKeys.keyID)  (device computes \(deviceKeys.keyID))")

            let sealer = EnvelopeSealer(sessionKeys: relayKeys)
            let opener = EnvelopeOpener(sessionKeys: [deviceKeys])
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let deviceID = "dev-demo"
            let message = MessageContent(
                messageID: UUID().uuidString.lowercased(),
                conversationID: "conv-42",
                senderID: "agent-7",
                senderName: sender,
                text: text,
                sentAt: now
            )
            let call = CallContent(
                callID: UUID().uuidString.lowercased(),
                callerID: "agent-7",
                callerName: sender,
                media: .audio,
                startedAt: now
            )
            for content in [PushContent.message(message), .call(call)] {
                let budget = PayloadBudget.apns(content.kind)
                let sealed = try sealer.seal(content, deviceID: deviceID)
                let context = EnvelopeContext(kind: content.kind, pushID: content.pushID, deviceID: deviceID)
                let opened = try opener.openContent(Envelope(text: sealed.text), context: context)
                print("\(content.kind) push")
                print("  plaintext          \(try content.encoded().count) bytes")
                print(
                    "  envelope           \(sealed.text.utf8.count) characters (limit \(budget.bodyLimit) for the whole body)"
                )
                print("  opened on device   \(opened == content ? "yes, identical" : "NO, DIFFERENT")")
                if case .message(let m) = opened { print("  user sees          \(m.senderName): \(m.text)") }
                if case .call(let c) = opened { print("  CallKit shows      \(c.callerName) (\(c.media.rawValue))") }
                let tampered = EnvelopeContext(kind: content.kind, pushID: content.pushID, deviceID: "another-device")
                do {
                    _ = try opener.openContent(sealed, context: tampered)
                    print("  other device       OPENED (this is a bug)")
                } catch {
                    print("  other device       refused: \(error)")
                }
            }
            print("done in \(clock.now - start)")
        }
    }

    /// `herald envelope open`: open one vector (for interop tests and debugging).
    struct Open: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "open",
            abstract: "Open the envelope of a test-vector entry (JSON) and print its content as JSON.",
            discussion: """
                The input is one entry in the format of docs/test-vectors/envelope-v1.json; only \
                kind, push_id, device_id, device_secret_key, relay_public_key and envelope are read. \
                Exits non-zero with the reason when the input is malformed or the envelope does not open.
                """
        )

        @Argument(help: "The vector file, or - for standard input.")
        var file: String = "-"

        func run() async throws {
            let data: Data
            if file == "-" {
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                guard let contents = FileManager.default.contents(atPath: file) else {
                    throw ValidationError("cannot read \(file)")
                }
                data = contents
            }
            let vector: EnvelopeVector
            do {
                vector = try JSONDecoder().decode(EnvelopeVector.self, from: data)
            } catch {
                throw ValidationError("the input is not an envelope vector: \(error)")
            }
            let content = try vector.open()
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(content), as: UTF8.self))
        }
    }
}
