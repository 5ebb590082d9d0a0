import HeraldCrypto

/// A device and a relay that have agreed keys, as after activation.
struct Pair {
    let device = KeyPair.generate()
    let relay = KeyPair.generate()
    let relayKeys: SessionKeys
    let deviceKeys: SessionKeys

    init() {
        relayKeys = try! KeyExchange.relaySessionKeys(relay: relay, device: device.publicKey)
        deviceKeys = try! KeyExchange.deviceSessionKeys(device: device, relay: relay.publicKey)
    }

    var sealer: EnvelopeSealer { EnvelopeSealer(sessionKeys: relayKeys) }
    var opener: EnvelopeOpener { EnvelopeOpener(sessionKeys: [deviceKeys]) }
}

extension MessageContent {
    static func sample(text: String = "Hello from support, your ticket is resolved.") -> MessageContent {
        MessageContent(
            messageID: "msg-123",
            conversationID: "conv-9",
            senderID: "agent-1",
            senderName: "Ada",
            text: text,
            sentAt: 1_763_726_400_000
        )
    }
}

extension CallContent {
    static let sample = CallContent(
        callID: "call-77",
        callerID: "agent-1",
        callerName: "Ada",
        media: .video,
        startedAt: 1_763_726_400_000
    )
}

extension PushContent {
    var context: EnvelopeContext { EnvelopeContext(kind: kind, pushID: pushID, deviceID: "device-1") }
}
