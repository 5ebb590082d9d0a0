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
            abstract: "Open the envelope of a test vector (JSON) and print its content as JSON.",
            discussion: """
                The input is docs/test-vectors/envelope-v1.json itself, with --vector naming one of \
                its vectors, or one entry of its "vectors" list on its own; only kind, push_id, \
                device_id, device_secret_key, relay_public_key and envelope are read. Exits non-zero \
                with the reason when the input is malformed or the envelope does not open.
                """
        )

        @Argument(
            help: "The vector file (docs/test-vectors/envelope-v1.json, or one entry of it), or - for standard input."
        )
        var file: String = "-"

        @Option(help: "Which vector of a whole vector file to open, by name (message-ascii, call-video, …).")
        var vector: String?

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
            let name = file == "-" ? "the input" : file
            let entry = try Self.entry(in: data, named: vector, source: name)
            let content: PushContent
            do {
                content = try entry.open()
            } catch {
                throw ValidationError("the envelope of \(entry.name ?? name) does not open: \(error)")
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(content), as: UTF8.self))
        }

        /// The entry to open: the named one of a whole vector file, or the input itself.
        static func entry(in data: Data, named wanted: String?, source: String) throws -> EnvelopeVector {
            guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw ValidationError("\(source) is not a JSON object (a vector file or one of its vectors)")
            }
            if object["vectors"] != nil {
                let file: EnvelopeVectorFile
                do {
                    file = try JSONDecoder().decode(EnvelopeVectorFile.self, from: data)
                } catch {
                    throw ValidationError("\(source) is not an envelope vector file: \(Self.describe(error))")
                }
                let names = file.vectors.compactMap(\.name)
                guard let wanted else {
                    throw ValidationError(
                        "\(source) holds \(file.vectors.count) vectors: name one with --vector (\(names.joined(separator: ", ")))"
                    )
                }
                guard let entry = file.vectors.first(where: { $0.name == wanted }) else {
                    throw ValidationError("\(source) has no vector '\(wanted)' (\(names.joined(separator: ", ")))")
                }
                return entry
            }
            guard wanted == nil else {
                throw ValidationError("--vector is for a whole vector file; \(source) is one entry")
            }
            do {
                return try JSONDecoder().decode(EnvelopeVector.self, from: data)
            } catch {
                throw ValidationError(
                    "\(source) is not an envelope vector: \(Self.describe(error)) "
                        + "(give docs/test-vectors/envelope-v1.json with --vector NAME, or one entry of its \"vectors\")"
                )
            }
        }

        /// A decoding error in one line: which field, and what is wrong with it.
        static func describe(_ error: any Error) -> String {
            func path(_ codingPath: [any CodingKey], _ key: (any CodingKey)? = nil) -> String {
                let keys = codingPath + (key.map { [$0] } ?? [])
                return keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            }
            switch error as? DecodingError {
            case .keyNotFound(let key, let context)?:
                return "'\(path(context.codingPath, key))' is missing"
            case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
                return "'\(path(context.codingPath))' has the wrong type"
            case .dataCorrupted(let context)?:
                return context.codingPath.isEmpty
                    ? "it is not valid JSON" : "'\(path(context.codingPath))' is not valid: \(context.debugDescription)"
            default:
                return "\(error)"
            }
        }
    }
}
