/// The plaintext encoding, v1 (docs/envelope.md, "Plaintext").
///
/// ```
/// message: 0x01 ‖ flags(1, bit 0 truncated) ‖ sentAt(i64be ms) ‖ str messageID ‖ str conversationID
///          ‖ str senderID ‖ str senderName ‖ str text
/// call:    0x02 ‖ flags(1, bit 0 video)     ‖ startedAt(i64be ms) ‖ str callID ‖ str callerID
///          ‖ str callerName
/// str = u16be byte length ‖ UTF-8 bytes
/// ```
/// Readers ignore flag bits they do not know; writers set them to zero.
extension PushContent {
    /// Bytes of a message's encoding that are not the text: type, flags, time, five lengths.
    static let messageFixedLength = 1 + 1 + 8 + 5 * 2
    /// Bytes of a call's encoding that are not strings: type, flags, time, three lengths.
    static let callFixedLength = 1 + 1 + 8 + 3 * 2

    /// The encoded plaintext.
    public func encoded() throws(HeraldCryptoError) -> [UInt8] {
        switch self {
        case .message(let m):
            var writer = ByteWriter(capacity: m.encodedLength)
            writer.append(PushKind.message.rawValue)
            writer.append(UInt8(m.truncated ? 1 : 0))
            writer.append(m.sentAt)
            try writer.appendString(m.messageID)
            try writer.appendString(m.conversationID)
            try writer.appendString(m.senderID)
            try writer.appendString(m.senderName)
            try writer.appendString(m.text)
            return writer.bytes
        case .call(let c):
            var writer = ByteWriter(capacity: c.encodedLength)
            writer.append(PushKind.call.rawValue)
            writer.append(UInt8(c.media == .video ? 1 : 0))
            writer.append(c.startedAt)
            try writer.appendString(c.callID)
            try writer.appendString(c.callerID)
            try writer.appendString(c.callerName)
            return writer.bytes
        case .missedCall(let missed):
            return try missed.encoded()
        case .callback(let c):
            return try c.encoded()
        }
    }

    /// Decodes a plaintext; throws `malformedContent` for anything but one exact encoding.
    public init(decoding bytes: [UInt8]) throws(HeraldCryptoError) {
        var reader = ByteReader(bytes)
        let type = try reader.readByte()
        let flags = try reader.readByte()
        let time = try reader.readInt64()
        switch PushKind(rawValue: type) {
        case .message:
            let messageID = try reader.readString()
            let conversationID = try reader.readString()
            let senderID = try reader.readString()
            let senderName = try reader.readString()
            let text = try reader.readString()
            self = .message(
                MessageContent(
                    messageID: messageID,
                    conversationID: conversationID,
                    senderID: senderID,
                    senderName: senderName,
                    text: text,
                    sentAt: time,
                    truncated: flags & 1 != 0
                )
            )
        case .call:
            let callID = try reader.readString()
            let callerID = try reader.readString()
            let callerName = try reader.readString()
            self = .call(
                CallContent(
                    callID: callID,
                    callerID: callerID,
                    callerName: callerName,
                    media: flags & 1 != 0 ? .video : .audio,
                    startedAt: time
                )
            )
        case .missedCall:
            self = .missedCall(try MissedCallContent(reading: &reader, flags: flags, time: time))
        case .callback:
            self = .callback(try CallbackContent(reading: &reader, flags: flags, time: time))
        case nil:
            throw .malformedContent
        }
        guard reader.isAtEnd else { throw .malformedContent }
    }

    /// The length of `encoded()`, without encoding.
    public var encodedLength: Int {
        switch self {
        case .message(let m): m.encodedLength
        case .call(let c): c.encodedLength
        case .missedCall(let missed): missed.encodedLength
        case .callback(let c): c.encodedLength
        }
    }
}

extension MessageContent {
    /// The length of this message's plaintext encoding.
    public var encodedLength: Int {
        PushContent.messageFixedLength + messageID.utf8.count + conversationID.utf8.count
            + senderID.utf8.count + senderName.utf8.count + text.utf8.count
    }
}

extension CallContent {
    /// The length of this call's plaintext encoding.
    public var encodedLength: Int {
        PushContent.callFixedLength + callID.utf8.count + callerID.utf8.count + callerName.utf8.count
    }
}
