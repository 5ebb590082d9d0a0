import Foundation
import Testing

@testable import HeraldCommands
@testable import HeraldCrypto

/// docs/test-vectors/envelope-v1.json: Herald must reproduce every vector byte for byte, open it,
/// and refuse every negative one with the recorded error.
///
/// After a deliberate format change, run with HERALD_WRITE_VECTORS=1: the fresh file is written
/// to a temporary path (named in the failure) to review and copy over the committed one; the
/// test fails until the committed file matches.
@Suite(.timeLimit(.minutes(1))) struct EnvelopeVectorTests {
    static let vectorURL = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "docs/test-vectors/envelope-v1.json")

    static func committedFile() throws -> EnvelopeVectorFile {
        let data = try Data(contentsOf: vectorURL)
        return try JSONDecoder().decode(EnvelopeVectorFile.self, from: data)
    }

    /// The vector file as this build writes it, byte for byte.
    static func generatedBytes() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(try VectorGenerator.file()) + Data([0x0A])
    }

    @Test func generatedVectorsEqualTheCommittedFile() throws {
        let generated = try VectorGenerator.file()
        let bytes = try Self.generatedBytes()
        // Fixed seeds and nonces: two runs write the same bytes.
        #expect(try Self.generatedBytes() == bytes)
        let committedBytes = try Data(contentsOf: Self.vectorURL)
        if ProcessInfo.processInfo.environment["HERALD_WRITE_VECTORS"] == "1", committedBytes != bytes {
            let fresh = URL(filePath: NSTemporaryDirectory()).appending(path: "envelope-v1-\(getpid()).json")
            try bytes.write(to: fresh)
            Issue.record(
                "wrote \(fresh.path): review it and copy it over \(Self.vectorURL.path) if the change is deliberate"
            )
        }
        let committed = try Self.committedFile()
        #expect(committed.vectors.count == generated.vectors.count)
        for (lhs, rhs) in zip(committed.vectors, generated.vectors) {
            #expect(lhs == rhs, "vector \(lhs.name ?? "") differs from what this build seals")
        }
        #expect(committed.negative == generated.negative)
        #expect(committed.clearFields == generated.clearFields)
        #expect(committed.routing == generated.routing)
        // The whole file too (notes, order, formatting), not only what decodes.
        #expect(committedBytes == bytes, "the committed file is not what this build writes")
    }

    @Test func everyCommittedVectorOpens() throws {
        let file = try Self.committedFile()
        #expect(file.vectors.count >= 7)
        for vector in file.vectors {
            let keys = try vector.deviceSessionKeys()
            #expect(keys.keyID.hex == vector.keyID)
            #expect(ByteEncoding.hex(keys.receive.copyBytes()) == vector.deviceReceiveKey)
            let content = try vector.open()
            #expect(content == vector.content, "vector \(vector.name)")
            #expect(try ByteEncoding.hex(content.encoded()) == vector.plaintext)
        }
    }

    @Test func everyNegativeVectorFailsWithItsError() throws {
        let file = try Self.committedFile()
        #expect(file.negative.count >= 8)
        let bases = Dictionary(uniqueKeysWithValues: file.vectors.map { ($0.name ?? "", $0) })
        for negative in file.negative {
            var vector = try #require(bases[negative.base])
            vector.kind = negative.kind
            vector.pushID = negative.pushID
            vector.deviceID = negative.deviceID
            vector.sequence = negative.sequence
            vector.envelope = negative.envelope
            let error = #expect(throws: HeraldCryptoError.self) { try vector.open() }
            #expect(error?.identifier == negative.error, "negative vector \(negative.name)")
        }
    }
}

/// Builds the vector file from fixed seeds, nonces and contents.
enum VectorGenerator {
    struct Spec {
        var name: String
        var description: String
        var content: PushContent
        var deviceID: String
    }

    static let specs: [Spec] = [
        Spec(
            name: "message-ascii",
            description: "A short message with full content.",
            content: .message(
                MessageContent(
                    messageID: "msg-0001",
                    conversationID: "conv-42",
                    senderID: "agent-7",
                    senderName: "Ada (Support)",
                    text: "Your order #1234 has shipped.",
                    sentAt: 1_763_726_400_000
                )
            ),
            deviceID: "dev-a1"
        ),
        Spec(
            name: "message-multibyte",
            description: "Multi-byte text: accents, CJK, an emoji with a skin tone and a ZWJ family.",
            content: .message(
                MessageContent(
                    messageID: "msg-0002",
                    conversationID: "conv-42",
                    senderID: "agent-7",
                    senderName: "Zoë Ångström",
                    text: "Grüße! 你好 👋🏽 👨‍👩‍👧 ça va?",
                    sentAt: 1_763_726_460_000
                )
            ),
            deviceID: "dev-a1"
        ),
        Spec(
            name: "message-truncated",
            description: "A message whose text was cut to fit; the truncated flag is set.",
            content: .message(
                MessageContent(
                    messageID: "msg-0003",
                    conversationID: "conv-43",
                    senderID: "agent-9",
                    senderName: "Grace",
                    text: "The first part of a long answer",
                    sentAt: 1_763_726_520_000,
                    truncated: true
                )
            ),
            deviceID: "dev-b2"
        ),
        Spec(
            name: "message-sender-only",
            description: "The 'sender only' content policy: the text is empty.",
            content: .message(
                MessageContent(
                    messageID: "msg-0004",
                    conversationID: "conv-44",
                    senderID: "agent-7",
                    senderName: "Ada (Support)",
                    text: "",
                    sentAt: 1_763_726_580_000
                )
            ),
            deviceID: "dev-b2"
        ),
        Spec(
            name: "call-audio",
            description: "An audio call.",
            content: .call(
                CallContent(
                    callID: "call-0001",
                    callerID: "agent-7",
                    callerName: "Ada (Support)",
                    media: .audio,
                    startedAt: 1_763_726_640_000
                )
            ),
            deviceID: "dev-a1"
        ),
        Spec(
            name: "call-video",
            description: "A video call with a non-ASCII caller name.",
            content: .call(
                CallContent(
                    callID: "call-0002",
                    callerID: "agent-11",
                    callerName: "José Núñez",
                    media: .video,
                    startedAt: 1_763_726_700_000
                )
            ),
            deviceID: "dev-c3"
        ),
        Spec(
            name: "message-non-ascii-ids",
            description:
                "Ids and device id outside ASCII (lengths in the AD count UTF-8 bytes) and a time before 1970.",
            content: .message(
                MessageContent(
                    messageID: "msg-ü-名",
                    conversationID: "conv-ñ",
                    senderID: "agent-é",
                    senderName: "Łukasz",
                    text: "Dzień dobry",
                    sentAt: -86_400_000
                )
            ),
            deviceID: "dev-ß-端末"
        ),
        Spec(
            name: "missed-call",
            description: "A missed-call alert (kind 0x03): the caller of a video call nobody answered.",
            content: .missedCall(
                CallContent(
                    callID: "call-0003",
                    callerID: "agent-7",
                    callerName: "Ada (Support)",
                    media: .video,
                    startedAt: 1_763_726_760_000
                )
            ),
            deviceID: "dev-a1"
        ),
        Spec(
            name: "callback-standard",
            description:
                "A callback's second push (after a snooze) with seed 002's dialog; the AD ends with the push number.",
            content: .callback(
                CallbackContent(
                    callbackID: "cb-0001",
                    sequence: 2,
                    serviceID: "3SQI3S31693JL9L3R00506T40C000U73",
                    dialog: .standard,
                    pushedAt: 1_763_727_000_000
                )
            ),
            deviceID: "dev-a1"
        ),
        Spec(
            name: "message-title-data",
            description:
                "A message with a sealed per-message title (flags bit 1) and sealed custom data (bit 2, keys in byte order).",
            content: .message(
                MessageContent(
                    messageID: "msg-0009",
                    conversationID: "conv-42",
                    senderID: "agent-7",
                    senderName: "Ada (Support)",
                    text: "Your refund is approved.",
                    sentAt: 1_763_726_400_000,
                    title: "Refund update",
                    data: ["order": "1001", "deep_link": "app://chat/42"]
                )
            ),
            deviceID: "dev-a1"
        ),
    ]

    static func bytes(startingAt start: Int, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: start + $0) }
    }

    static func vector(_ spec: Spec, index: Int) throws -> EnvelopeVector {
        let deviceSeed = bytes(startingAt: index * 3, count: 32)
        let relaySeed = bytes(startingAt: 0x80 + index * 5, count: 32)
        let nonce = bytes(startingAt: 0x40 + index * 7, count: Envelope.nonceLength)
        let device = try KeyPair(seed: SecureBytes(copying: deviceSeed))
        let relay = try KeyPair(seed: SecureBytes(copying: relaySeed))
        let relayKeys = try KeyExchange.relaySessionKeys(relay: relay, device: device.publicKey)
        let deviceKeys = try KeyExchange.deviceSessionKeys(device: device, relay: relay.publicKey)
        let context = EnvelopeContext(
            kind: spec.content.kind,
            pushID: spec.content.pushID,
            deviceID: spec.deviceID,
            sequence: spec.content.sequence
        )
        let plaintext = try spec.content.encoded()
        let envelope = try EnvelopeSealer(sessionKeys: relayKeys).seal(
            plaintext: plaintext,
            context: context,
            nonce: nonce
        )
        return EnvelopeVector(
            name: spec.name,
            description: spec.description,
            kind: spec.content.kind,
            pushID: spec.content.pushID,
            deviceID: spec.deviceID,
            sequence: spec.content.kind == .callback ? spec.content.sequence : nil,
            deviceSeed: ByteEncoding.hex(deviceSeed),
            devicePublicKey: ByteEncoding.hex(device.publicKey.bytes),
            deviceSecretKey: ByteEncoding.hex(device.secretKey.copyBytes()),
            relaySeed: ByteEncoding.hex(relaySeed),
            relayPublicKey: ByteEncoding.hex(relay.publicKey.bytes),
            relaySecretKey: ByteEncoding.hex(relay.secretKey.copyBytes()),
            keyID: relayKeys.keyID.hex,
            deviceReceiveKey: ByteEncoding.hex(deviceKeys.receive.copyBytes()),
            deviceTransmitKey: ByteEncoding.hex(deviceKeys.transmit.copyBytes()),
            nonce: ByteEncoding.hex(nonce),
            content: spec.content,
            plaintext: ByteEncoding.hex(plaintext),
            additionalData: ByteEncoding.hex(try context.additionalData(keyID: relayKeys.keyID)),
            envelope: envelope.text
        )
    }

    static func negatives(
        base: EnvelopeVector,
        call: EnvelopeVector,
        missed: EnvelopeVector,
        callback: EnvelopeVector
    ) -> [EnvelopeVectorFile.Negative] {
        let bytes = ByteEncoding.bytes(base64URL: base.envelope)!
        func flipped(_ index: Int) -> String {
            var copy = bytes
            copy[index] ^= 0x01
            return ByteEncoding.base64URL(copy)
        }
        func negative(
            _ name: String,
            envelope: String,
            kind: PushKind? = nil,
            pushID: String? = nil,
            deviceID: String? = nil,
            sequence: UInt16? = nil,
            error: HeraldCryptoError,
            from vector: EnvelopeVector? = nil
        ) -> EnvelopeVectorFile.Negative {
            let vector = vector ?? base
            let kind = kind ?? vector.kind
            return .init(
                name: name,
                base: vector.name ?? "",
                kind: kind,
                pushID: pushID ?? vector.pushID,
                deviceID: deviceID ?? vector.deviceID,
                sequence: kind == .callback ? sequence ?? vector.sequence : nil,
                envelope: envelope,
                error: error.identifier
            )
        }
        let last = bytes.count - 1
        return [
            negative("flipped-version", envelope: flipped(0), error: .unknownVersion),
            negative("flipped-key-id", envelope: flipped(1), error: .unknownKeyID),
            negative("flipped-nonce", envelope: flipped(9), error: .authenticationFailed),
            negative("flipped-ciphertext", envelope: flipped(Envelope.headerLength), error: .authenticationFailed),
            negative("flipped-tag", envelope: flipped(last), error: .authenticationFailed),
            negative("other-device", envelope: base.envelope, deviceID: "dev-zz", error: .authenticationFailed),
            negative("other-message-id", envelope: base.envelope, pushID: "msg-9999", error: .authenticationFailed),
            negative("message-opened-as-call", envelope: base.envelope, kind: .call, error: .authenticationFailed),
            negative(
                "call-opened-as-message",
                envelope: call.envelope,
                kind: .message,
                error: .authenticationFailed,
                from: call
            ),
            negative(
                "call-opened-as-missed-call",
                envelope: call.envelope,
                kind: .missedCall,
                error: .authenticationFailed,
                from: call
            ),
            negative(
                "missed-call-opened-as-call",
                envelope: missed.envelope,
                kind: .call,
                error: .authenticationFailed,
                from: missed
            ),
            negative(
                "missed-call-opened-as-message",
                envelope: missed.envelope,
                kind: .message,
                error: .authenticationFailed,
                from: missed
            ),
            negative(
                "callback-opened-as-message",
                envelope: callback.envelope,
                kind: .message,
                error: .authenticationFailed,
                from: callback
            ),
            negative(
                "callback-opened-as-call",
                envelope: callback.envelope,
                kind: .call,
                error: .authenticationFailed,
                from: callback
            ),
            negative(
                "callback-opened-as-another-push",
                envelope: callback.envelope,
                sequence: 1,
                error: .authenticationFailed,
                from: callback
            ),
            negative(
                "message-opened-as-callback",
                envelope: base.envelope,
                kind: .callback,
                sequence: 0,
                error: .authenticationFailed
            ),
            negative(
                "truncated-below-overhead",
                envelope: ByteEncoding.base64URL(bytes[0..<(Envelope.overhead - 1)]),
                error: .tooShort
            ),
            negative("truncated-tag", envelope: ByteEncoding.base64URL(bytes.dropLast()), error: .authenticationFailed),
            negative("empty", envelope: "", error: .emptyInput),
            negative("not-base64url", envelope: "AQ+/" + base.envelope.dropFirst(4), error: .badFormat),
        ]
    }

    static let clearFields: [EnvelopeVectorFile.ClearField] = [
        .init(
            network: "apns",
            field: "aps.alert.title, aps.alert.body",
            boundBy: "none",
            rule: "The app's generic text, shown only when the content does not open or is tampered."
        ),
        .init(
            network: "apns",
            field: "aps.thread-id",
            boundBy: "sealed_content",
            rule:
                "Must equal the sealed conversation_id, else tampered; the notification is threaded by the sealed value."
        ),
        .init(
            network: "apns",
            field: "herald.v",
            boundBy: "none",
            rule: "The payload layout (1); the envelope's own version byte is in the additional data."
        ),
        .init(
            network: "apns",
            field: "herald.kind",
            boundBy: "push_type",
            rule:
                "Must be the kind the push type gives (alert: message, voip: call), else tampered; that kind is the additional data's kind byte."
        ),
        .init(
            network: "apns",
            field: "herald.message_id, herald.call_id",
            boundBy: "additional_data",
            rule: "The additional data's push_id: another value does not open."
        ),
        .init(
            network: "apns",
            field: "herald.conversation_id",
            boundBy: "sealed_content",
            rule: "Must equal the sealed conversation_id (missing counts as different), else tampered."
        ),
        .init(
            network: "apns",
            field: "herald.policy",
            boundBy: "none",
            rule:
                "Informational. With policy none there is no envelope: nothing is authenticated and the app fetches the message by id."
        ),
        .init(
            network: "apns",
            field: "herald.push_id",
            boundBy: "none",
            rule: "The relay's id of this push (its apns-id), which receipts name (docs/receipts.md). Informational."
        ),
        .init(
            network: "fcm",
            field: "v",
            boundBy: "none",
            rule: "The payload layout (1); the envelope's own version byte is in the additional data."
        ),
        .init(
            network: "fcm",
            field: "kind",
            boundBy: "additional_data",
            rule: "The additional data's kind byte: another value does not open."
        ),
        .init(
            network: "fcm",
            field: "message_id, call_id",
            boundBy: "additional_data",
            rule: "The additional data's push_id: another value does not open."
        ),
        .init(
            network: "fcm",
            field: "conversation_id",
            boundBy: "sealed_content",
            rule: "Must equal the sealed conversation_id (missing counts as different), else tampered."
        ),
        .init(
            network: "fcm",
            field: "policy",
            boundBy: "none",
            rule:
                "Informational. With policy none there is no envelope: nothing is authenticated and the app fetches the message by id."
        ),
        .init(
            network: "fcm",
            field: "push_id",
            boundBy: "none",
            rule: "The relay's id of this push, which receipts name (docs/receipts.md). Informational."
        ),
    ]

    /// The APNs body the relay sends for a message (`PushPayload.message`), with a clear field
    /// left out when nil. The vector's ids need no JSON escaping.
    static func apnsBody(
        kind: String,
        messageID: String,
        conversationID: String?,
        threadID: String?,
        sealed: String
    ) -> String {
        func field(_ name: String, _ value: String?) -> String {
            value.map { ",\"\(name)\":\"\($0)\"" } ?? ""
        }
        return "{\"aps\":{\"alert\":{\"title\":\"New message\",\"body\":\"You have a new message\"}"
            + ",\"mutable-content\":1,\"sound\":\"default\"" + field("thread-id", threadID)
            + "},\"herald\":{\"v\":1" + field("kind", kind) + field("message_id", messageID)
            + field("conversation_id", conversationID) + field("policy", "full") + field("sealed", sealed) + "}}"
    }

    static func routing(base: EnvelopeVector) -> [EnvelopeVectorFile.Routing] {
        guard case .message(let message) = base.content else { return [] }
        let name = base.name ?? ""
        let conversation = message.conversationID
        func apns(_ entry: String, _ expect: String, body: String) -> EnvelopeVectorFile.Routing {
            .init(name: entry, base: name, network: "apns", pushType: "alert", payload: body, expect: expect)
        }
        func fcm(
            _ entry: String,
            _ expect: String,
            change: (inout [String: String]) -> Void
        ) -> EnvelopeVectorFile.Routing {
            var data = [
                "v": "1", "kind": "message", "message_id": base.pushID, "conversation_id": conversation,
                "policy": "full", "sealed": base.envelope,
            ]
            change(&data)
            return .init(name: entry, base: name, network: "fcm", data: data, expect: expect)
        }
        /// The body as sent, with the changes asked for ("" removes a field).
        func body(
            kind: String = "message",
            messageID: String? = nil,
            conversationID: String? = nil,
            threadID: String? = nil
        ) -> String {
            func value(_ changed: String?) -> String? {
                guard let changed else { return conversation }
                return changed.isEmpty ? nil : changed
            }
            return apnsBody(
                kind: kind,
                messageID: messageID ?? base.pushID,
                conversationID: value(conversationID),
                threadID: value(threadID),
                sealed: base.envelope
            )
        }
        return [
            apns("apns-as-sent", "opened", body: body()),
            apns("apns-conversation-changed", "tampered", body: body(conversationID: "evil-thread")),
            apns("apns-conversation-removed", "tampered", body: body(conversationID: "")),
            apns("apns-thread-id-changed", "tampered", body: body(threadID: "evil-thread")),
            apns("apns-thread-id-removed", "tampered", body: body(threadID: "")),
            apns("apns-kind-changed", "tampered", body: body(kind: "call")),
            apns("apns-message-id-changed", "refused", body: body(messageID: "msg-9999")),
            fcm("fcm-as-sent", "opened") { _ in },
            fcm("fcm-conversation-changed", "tampered") { $0["conversation_id"] = "evil-thread" },
            fcm("fcm-conversation-removed", "tampered") { $0["conversation_id"] = nil },
            fcm("fcm-message-id-changed", "refused") { $0["message_id"] = "msg-9999" },
            fcm("fcm-kind-changed", "refused") {
                $0["kind"] = "call"
                $0["call_id"] = $0["message_id"]
            },
        ]
    }

    static func file() throws -> EnvelopeVectorFile {
        let vectors = try specs.enumerated().map { try vector($1, index: $0) }
        return EnvelopeVectorFile(
            format: "herald-envelope-v1",
            notes: [
                "Specification: docs/envelope.md. Byte fields are lowercase hex; envelope is base64url without padding.",
                "Key pairs come from crypto_kx_seed_keypair(seed); the device is the kx client, the relay the kx server.",
                "The relay seals with its tx key (= device_rx); nonces here are fixed, in production they are random.",
                "Each negative entry must fail to open; error is the name Herald reports.",
                "clear_fields: every clear field beside the envelope in a push and what vouches for it (section 5).",
                "routing: whole pushes around a vector's envelope, some with clear fields changed; expect is opened, tampered (opens, a clear field disagrees: generic text) or refused (does not open).",
            ],
            vectors: vectors,
            negative: negatives(
                base: vectors[0],
                call: vectors[4],
                missed: vectors.first { $0.kind == .missedCall } ?? vectors[4],
                // By name: other kinds' vectors may be added before it.
                callback: try #require(vectors.first { $0.name == "callback-standard" })
            ),
            clearFields: clearFields,
            routing: routing(base: vectors[0])
        )
    }
}
