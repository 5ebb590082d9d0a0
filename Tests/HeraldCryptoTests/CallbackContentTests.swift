import HeraldCrypto
import Testing

/// The callback plaintext (docs/envelope.md section 6) and its additional data (section 5).
@Suite(.timeLimit(.minutes(1))) struct CallbackContentTests {
    static let content = CallbackContent(
        callbackID: "c",
        sequence: 0x0102,
        serviceID: "s",
        dialog: CallbackDialog(
            title: "T",
            text: "é",
            actions: [CallbackAction(id: "z", label: "L", kind: .snooze, delaySeconds: 300)]
        ),
        pushedAt: 0x0102_0304_0506_0708
    )

    @Test func layoutIsAsDocumented() throws {
        let bytes = try PushContent.callback(Self.content).encoded()
        let expected: [UInt8] =
            [0x04, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08]
            + [0x00, 0x01, 0x63] + [0x01, 0x02] + [0x00, 0x01, 0x73] + [0x00, 0x01, 0x54] + [0x00, 0x02, 0xC3, 0xA9]
            + [0x01] + [0x00, 0x01, 0x7A] + [0x00, 0x01, 0x4C] + [0x02] + [0x00, 0x00, 0x01, 0x2C]
        #expect(bytes == expected)
        #expect(bytes.count == Self.content.encodedLength)
        #expect(try PushContent(decoding: bytes) == .callback(Self.content))
    }

    @Test func malformedIsRefused() throws {
        let bytes = try PushContent.callback(Self.content).encoded()
        var unknownKind = bytes
        unknownKind[unknownKind.count - 5] = 0x09
        for bad in [unknownKind, bytes + [0x00], Array(bytes.dropLast())] {
            #expect(throws: HeraldCryptoError.malformedContent) { try PushContent(decoding: bad) }
        }
    }

    @Test func sealedAsOnePushOpensAsThatPushOnly() throws {
        let (device, relay) = (KeyPair.generate(), KeyPair.generate())
        let sealer = EnvelopeSealer(
            sessionKeys: try KeyExchange.relaySessionKeys(relay: relay, device: device.publicKey)
        )
        let opener = EnvelopeOpener(sessionKeys: [
            try KeyExchange.deviceSessionKeys(device: device, relay: relay.publicKey)
        ])
        let envelope = try sealer.seal(.callback(Self.content), deviceID: "d")
        let right = EnvelopeContext(kind: .callback, pushID: "c", deviceID: "d", sequence: 0x0102)
        #expect(try opener.openContent(envelope, context: right) == .callback(Self.content))
        for wrong in [
            EnvelopeContext(kind: .callback, pushID: "c", deviceID: "d", sequence: 0x0101),
            EnvelopeContext(kind: .message, pushID: "c", deviceID: "d"),
            EnvelopeContext(kind: .call, pushID: "c", deviceID: "d"),
        ] {
            #expect(throws: HeraldCryptoError.authenticationFailed) { try opener.open(envelope, context: wrong) }
        }
    }
}
