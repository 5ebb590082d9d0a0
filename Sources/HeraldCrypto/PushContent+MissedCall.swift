/// The content of a missed-call alert, sealed for one device: the call the user did not answer,
/// with its caller (shown by the Notification Service Extension, never on the lock screen in
/// clear).
///
/// Its own kind (`PushKind.missedCall`, 0x03) is bound into the envelope's additional data, so a
/// sealed call cannot be replayed as a missed call, nor a missed call as a call or a message.
///
/// ```
/// missed call: 0x03 ‖ flags(1, bit 0 video) ‖ startedAt(i64be ms) ‖ str callID ‖ str callerID
///              ‖ str callerName
/// ```
public struct MissedCallContent: Sendable, Hashable, Codable {
    /// The call id; also bound into the envelope's additional data.
    public var callID: String
    public var callerID: String
    /// The caller's display name, shown by the extension.
    public var callerName: String
    public var media: CallMedia
    /// When the call started ringing, in milliseconds since the Unix epoch.
    public var startedAt: Int64

    public init(callID: String, callerID: String, callerName: String, media: CallMedia, startedAt: Int64) {
        self.callID = callID
        self.callerID = callerID
        self.callerName = callerName
        self.media = media
        self.startedAt = startedAt
    }

    enum CodingKeys: String, CodingKey {
        case callID = "call_id"
        case callerID = "caller_id"
        case callerName = "caller_name"
        case media
        case startedAt = "started_at"
    }

    /// The length of this content's plaintext encoding.
    public var encodedLength: Int {
        1 + 1 + 8 + 3 * 2 + callID.utf8.count + callerID.utf8.count + callerName.utf8.count
    }

    func encoded() throws(HeraldCryptoError) -> [UInt8] {
        var writer = ByteWriter(capacity: encodedLength)
        writer.append(PushKind.missedCall.rawValue)
        writer.append(UInt8(media == .video ? 1 : 0))
        writer.append(startedAt)
        try writer.appendString(callID)
        try writer.appendString(callerID)
        try writer.appendString(callerName)
        return writer.bytes
    }

    /// Reads the fields after the type, flags and time.
    init(reading reader: inout ByteReader, flags: UInt8, time: Int64) throws(HeraldCryptoError) {
        let callID = try reader.readString()
        let callerID = try reader.readString()
        let callerName = try reader.readString()
        self.init(
            callID: callID,
            callerID: callerID,
            callerName: callerName,
            media: flags & 1 != 0 ? .video : .audio,
            startedAt: time
        )
    }
}
