import HeraldCrypto
import Testing

@Suite(.timeLimit(.minutes(1))) struct EnvelopeTests {
    let pair = Pair()

    @Test(arguments: [PushContent.message(.sample()), .call(.sample)])
    func roundTripThroughTheTextForm(content: PushContent) throws {
        let envelope = try pair.sealer.seal(content, deviceID: "device-1")
        let parsed = try Envelope(text: envelope.text)
        #expect(parsed == envelope)
        #expect(parsed.keyID == pair.deviceKeys.keyID)
        #expect(try pair.opener.openContent(parsed, context: content.context) == content)
        #expect(envelope.bytes.count == content.encodedLength + Envelope.overhead)
        #expect(!envelope.text.contains("="))
        #expect(envelope.text.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
    }

    @Test func everySealUsesAFreshNonce() throws {
        let content = PushContent.message(.sample())
        let a = try pair.sealer.seal(content, deviceID: "device-1")
        let b = try pair.sealer.seal(content, deviceID: "device-1")
        #expect(a.nonce != b.nonce)
        #expect(a.ciphertext != b.ciphertext)
    }

    @Test func theCiphertextDoesNotContainThePlaintext() throws {
        let secret = "the-launch-code-is-0000"
        let envelope = try pair.sealer.seal(.message(.sample(text: secret)), deviceID: "device-1")
        #expect(!envelope.bytes.containsSubsequence(Array(secret.utf8)))
    }

    /// Flipping any single byte of the binary form makes opening fail with the error for that field.
    @Test func flippingAnyByteFails() throws {
        let content = PushContent.message(.sample())
        let bytes = try pair.sealer.seal(content, deviceID: "device-1").bytes
        for index in bytes.indices {
            var tampered = bytes
            tampered[index] ^= 0x20
            let expected: HeraldCryptoError =
                switch index {
                case 0: .unknownVersion
                case 1..<9: .unknownKeyID
                default: .authenticationFailed
                }
            #expect(throws: expected, "byte \(index)") {
                try pair.opener.openContent(Envelope(bytes: tampered), context: content.context)
            }
        }
    }

    @Test func aMessageCannotBeOpenedAsACallOrUnderAnotherIDOrDevice() throws {
        let content = PushContent.message(.sample())
        let envelope = try pair.sealer.seal(content, deviceID: "device-1")
        let contexts = [
            EnvelopeContext(kind: .call, pushID: content.pushID, deviceID: "device-1"),
            EnvelopeContext(kind: .message, pushID: "msg-124", deviceID: "device-1"),
            EnvelopeContext(kind: .message, pushID: content.pushID, deviceID: "device-2"),
        ]
        for context in contexts {
            #expect(throws: HeraldCryptoError.authenticationFailed) {
                try pair.opener.openContent(envelope, context: context)
            }
        }
    }

    @Test func aCallCannotBeOpenedAsAMessage() throws {
        let content = PushContent.call(.sample)
        let envelope = try pair.sealer.seal(content, deviceID: "device-1")
        #expect(throws: HeraldCryptoError.authenticationFailed) {
            try pair.opener.openContent(
                envelope,
                context: EnvelopeContext(kind: .message, pushID: content.pushID, deviceID: "device-1")
            )
        }
    }

    /// A sealer that wrote content of one kind under the context of another is caught after opening.
    @Test func contentThatContradictsItsContextIsRefused() throws {
        let call = PushContent.call(.sample)
        let asMessage = EnvelopeContext(kind: .message, pushID: call.pushID, deviceID: "device-1")
        let wrongKind = try pair.sealer.seal(plaintext: call.encoded(), context: asMessage)
        #expect(throws: HeraldCryptoError.wrongKind) { try pair.opener.openContent(wrongKind, context: asMessage) }

        let message = PushContent.message(.sample())
        let otherID = EnvelopeContext(kind: .message, pushID: "msg-other", deviceID: "device-1")
        let mismatch = try pair.sealer.seal(plaintext: message.encoded(), context: otherID)
        #expect(throws: HeraldCryptoError.contentMismatch) { try pair.opener.openContent(mismatch, context: otherID) }
    }

    @Test func anotherDevicesKeysCannotOpen() throws {
        let other = Pair()
        let content = PushContent.message(.sample())
        let envelope = try pair.sealer.seal(content, deviceID: "device-1")
        #expect(throws: HeraldCryptoError.unknownKeyID) {
            try other.opener.openContent(envelope, context: content.context)
        }
    }

    /// After re-activation the device keeps the previous keys, so pushes already in flight open.
    @Test func previousKeysStillOpenAfterRotation() throws {
        let rotated = Pair()
        let content = PushContent.message(.sample())
        let old = try pair.sealer.seal(content, deviceID: "device-1")
        let new = try rotated.sealer.seal(content, deviceID: "device-1")
        let opener = EnvelopeOpener(sessionKeys: [rotated.deviceKeys, pair.deviceKeys])
        #expect(opener.keyIDs == [pair.deviceKeys.keyID, rotated.deviceKeys.keyID])
        #expect(try opener.openContent(old, context: content.context) == content)
        #expect(try opener.openContent(new, context: content.context) == content)
    }

    @Test func malformedInputsFailWithTheirErrors() throws {
        let envelope = try pair.sealer.seal(.message(.sample()), deviceID: "device-1")
        #expect(throws: HeraldCryptoError.emptyInput) { try Envelope(bytes: []) }
        #expect(throws: HeraldCryptoError.emptyInput) { try Envelope(text: "") }
        #expect(throws: HeraldCryptoError.tooShort) { try Envelope(bytes: envelope.bytes.prefix(48)) }
        #expect(throws: HeraldCryptoError.tooShort) { try Envelope(bytes: [1]) }
        #expect(throws: HeraldCryptoError.unknownVersion) { try Envelope(bytes: [2] + envelope.bytes.dropFirst()) }
        #expect(throws: HeraldCryptoError.badFormat) { try Envelope(text: envelope.text + "=") }
        #expect(throws: HeraldCryptoError.badFormat) { try Envelope(text: "AQ+/" + envelope.text.dropFirst(4)) }
        #expect(throws: HeraldCryptoError.badFormat) { try Envelope(text: "not base64 at all!") }
        // One byte off the end: the tag no longer verifies.
        let short = try Envelope(bytes: envelope.bytes.dropLast())
        #expect(throws: HeraldCryptoError.authenticationFailed) {
            try pair.opener.openContent(short, context: PushContent.message(.sample()).context)
        }
    }

    @Test func randomGarbageNeverCrashes() {
        var generator = SystemRandomNumberGenerator()
        let opener = pair.opener
        let context = PushContent.message(.sample()).context
        for length in 0..<300 {
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if length > 9 {
                bytes[0] = 1
                // Half the time, aim the garbage at a real key id so decryption itself is exercised.
                if length % 2 == 0 { bytes.replaceSubrange(1..<9, with: pair.deviceKeys.keyID.bytes) }
            }
            #expect(throws: HeraldCryptoError.self) {
                try opener.openContent(Envelope(bytes: bytes), context: context)
            }
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(throws: HeraldCryptoError.self) { try Envelope(text: text) }
        }
    }
}

extension Array where Element == UInt8 {
    func containsSubsequence(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return needle.isEmpty }
        return (0...(count - needle.count)).contains { Array(self[$0..<($0 + needle.count)]) == needle }
    }
}
