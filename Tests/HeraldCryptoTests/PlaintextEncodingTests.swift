import HeraldCrypto
import Testing

@Suite(.timeLimit(.minutes(1))) struct PlaintextEncodingTests {
    @Test func messageLayoutIsAsDocumented() throws {
        let message = MessageContent(
            messageID: "m",
            conversationID: "c",
            senderID: "s",
            senderName: "N",
            text: "é",
            sentAt: 0x0102_0304_0506_0708,
            truncated: true
        )
        let bytes = try PushContent.message(message).encoded()
        let expected: [UInt8] =
            [0x01, 0x01, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08]
            + [0x00, 0x01, 0x6D] + [0x00, 0x01, 0x63] + [0x00, 0x01, 0x73] + [0x00, 0x01, 0x4E]
            + [0x00, 0x02, 0xC3, 0xA9]
        #expect(bytes == expected)
        #expect(bytes.count == message.encodedLength)
    }

    @Test func callLayoutIsAsDocumented() throws {
        let call = CallContent(callID: "c", callerID: "a", callerName: "B", media: .video, startedAt: -1)
        let bytes = try PushContent.call(call).encoded()
        let expected: [UInt8] =
            [0x02, 0x01] + [UInt8](repeating: 0xFF, count: 8)
            + [0x00, 0x01, 0x63] + [0x00, 0x01, 0x61] + [0x00, 0x01, 0x42]
        #expect(bytes == expected)
        #expect(try PushContent(decoding: bytes) == .call(call))
    }

    @Test func unknownFlagBitsAreIgnored() throws {
        var bytes = try PushContent.call(.sample).encoded()
        bytes[1] = 0xFE  // video bit clear, every other bit set
        guard case .call(let call) = try PushContent(decoding: bytes) else {
            Issue.record("not a call")
            return
        }
        #expect(call.media == .audio)
    }

    @Test func malformedPlaintextsAreRefused() throws {
        let good = try PushContent.message(.sample()).encoded()
        var invalidUTF8 = good
        invalidUTF8[invalidUTF8.count - 1] = 0xFF
        var unknownType = good
        unknownType[0] = 0x07
        var lengthPastEnd = good
        lengthPastEnd[10] = 0xFF
        let cases: [[UInt8]] = [
            [], [0x01], Array(good.prefix(9)), good.dropLast().map { $0 }, good + [0x00],
            invalidUTF8, unknownType, lengthPastEnd,
        ]
        for bytes in cases {
            #expect(throws: HeraldCryptoError.malformedContent) { try PushContent(decoding: bytes) }
        }
    }

    @Test func fieldsLongerThanSixtyFiveKilobytesAreRefused() {
        let message = MessageContent.sample(text: String(repeating: "a", count: 65_536))
        #expect(throws: HeraldCryptoError.fieldTooLong) { try PushContent.message(message).encoded() }
        let fits = MessageContent.sample(text: String(repeating: "a", count: 65_535))
        #expect(throws: Never.self) { try PushContent.message(fits).encoded() }
    }
}
