/// The plaintext encoding, v1 (docs/envelope.md, "Plaintext").
///
/// ```
/// message: 0x01 ‖ flags(1, bit 0 truncated, bit 1 title, bit 2 data) ‖ sentAt(i64be ms)
///          ‖ str messageID ‖ str conversationID ‖ str senderID ‖ str senderName ‖ str text
///          [‖ str title] [‖ u16be count ‖ (str key ‖ str value)*, keys in byte order]
/// call:    0x02 ‖ flags(1, bit 0 video)     ‖ startedAt(i64be ms) ‖ str callID ‖ str callerID
///          ‖ str callerName
/// missed call: the same fields as a call, under type 0x03
/// str = u16be byte length ‖ UTF-8 bytes
/// ```
/// Readers ignore flag bits they do not know; writers set them to zero. A message without a title
/// or data encodes exactly as before bits 1 and 2 existed; one with them is refused by an older
/// reader (bytes after the text), which then shows the generic text.
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
            writer.append(UInt8((m.truncated ? 1 : 0) | (m.title != nil ? 2 : 0) | (m.data != nil ? 4 : 0)))
            writer.append(m.sentAt)
            try writer.appendString(m.messageID)
            try writer.appendString(m.conversationID)
            try writer.appendString(m.senderID)
            try writer.appendString(m.senderName)
            try writer.appendString(m.text)
            if let title = m.title { try writer.appendString(title) }
            if let data = m.data {
                guard data.count <= Int(UInt16.max) else { throw .doesNotFit }
                writer.append(UInt8(data.count >> 8))
                writer.append(UInt8(data.count & 0xff))
                // Keys in byte order: one content, one encoding.
                let pairs = data.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
                for (key, value) in pairs {
                    try writer.appendString(key)
                    try writer.appendString(value)
                }
            }
            return writer.bytes
        case .call(let c), .missedCall(let c):
            // A missed call is the call's own fields under its own type byte.
            var writer = ByteWriter(capacity: c.encodedLength)
            writer.append(kind.rawValue)
            writer.append(UInt8(c.media == .video ? 1 : 0))
            writer.append(c.startedAt)
            try writer.appendString(c.callID)
            try writer.appendString(c.callerID)
            try writer.appendString(c.callerName)
            return writer.bytes
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
            let title = flags & 2 != 0 ? try reader.readString() : nil
            var data: [String: String]?
            if flags & 4 != 0 {
                let count = Int(try reader.readByte()) << 8 | Int(try reader.readByte())
                var fields: [String: String] = [:]
                for _ in 0..<count {
                    let key = try reader.readString()
                    // One encoding per content: keys appear once.
                    guard fields[key] == nil else { throw .malformedContent }
                    fields[key] = try reader.readString()
                }
                data = fields
            }
            self = .message(
                MessageContent(
                    messageID: messageID,
                    conversationID: conversationID,
                    senderID: senderID,
                    senderName: senderName,
                    text: text,
                    sentAt: time,
                    truncated: flags & 1 != 0,
                    title: title,
                    data: data
                )
            )
        case .call, .missedCall:
            let callID = try reader.readString()
            let callerID = try reader.readString()
            let callerName = try reader.readString()
            let call = CallContent(
                callID: callID,
                callerID: callerID,
                callerName: callerName,
                media: flags & 1 != 0 ? .video : .audio,
                startedAt: time
            )
            self = type == PushKind.call.rawValue ? .call(call) : .missedCall(call)
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
        case .call(let c), .missedCall(let c): c.encodedLength
        case .callback(let c): c.encodedLength
        }
    }
}

extension MessageContent {
    /// The length of this message's plaintext encoding.
    public var encodedLength: Int {
        PushContent.messageFixedLength + messageID.utf8.count + conversationID.utf8.count
            + senderID.utf8.count + senderName.utf8.count + text.utf8.count + extrasLength
    }

    /// The bytes the title and data add: each string with its 2-byte length, the data's count.
    var extrasLength: Int {
        var length = title.map { 2 + $0.utf8.count } ?? 0
        if let data { length += 2 + data.reduce(0) { $0 + 4 + $1.key.utf8.count + $1.value.utf8.count } }
        return length
    }
}

extension CallContent {
    /// The length of this call's plaintext encoding.
    public var encodedLength: Int {
        PushContent.callFixedLength + callID.utf8.count + callerID.utf8.count + callerName.utf8.count
    }
}
