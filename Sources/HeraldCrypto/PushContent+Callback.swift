import HeraldMacros

/// What the user's choice in a callback dialog does (seed 002's "Yes, I'm ready to talk / No,
/// try again in 5 minutes / Cancel, my problem has been solved").
public enum CallbackActionKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// The user is ready: the contact center connects the call.
    case connect
    /// Not now: the relay pushes the dialog again after the action's delay.
    case snooze
    /// The user no longer needs the callback.
    case cancel

    /// Its byte in the plaintext encoding.
    var code: UInt8 {
        switch self {
        case .connect: 1
        case .snooze: 2
        case .cancel: 3
        }
    }

    init?(code: UInt8) {
        guard let kind = Self.allCases.first(where: { $0.code == code }) else { return nil }
        self = kind
    }
}

/// One choice the dialog offers.
@MemberwiseInit
public struct CallbackAction: Sendable, Hashable, Codable {
    /// What the app posts back (`POST /v1/callbacks/{id}/actions/{id}`).
    public var id: String
    /// The button's text.
    public var label: String
    public var kind: CallbackActionKind
    /// For a snooze: how long until the next push, in seconds; zero otherwise.
    public var delaySeconds: Int = 0

    enum CodingKeys: String, CodingKey {
        case id, label, kind
        case delaySeconds = "delay_seconds"
    }
}

/// The dialog a callback push shows: seed 002's "Agent is available right now / Are you ready?".
@MemberwiseInit
public struct CallbackDialog: Sendable, Hashable, Codable {
    public var title: String
    public var text: String
    /// One to four choices, ids unique.
    public var actions: [CallbackAction]

    /// Seed 002's dialog, used when a request names none.
    public static let standard = CallbackDialog(
        title: "Agent is available right now",
        text: "Are you ready?",
        actions: [
            CallbackAction(id: "ready", label: "Yes, I'm ready to talk", kind: .connect),
            CallbackAction(id: "snooze", label: "No, try again in 5 minutes", kind: .snooze, delaySeconds: 300),
            CallbackAction(id: "cancel", label: "Cancel, my problem has been solved", kind: .cancel),
        ]
    )
}

/// The content of a callback push, sealed for one device: the callback, which push of it this is,
/// the contact center's service id and the dialog.
@MemberwiseInit
public struct CallbackContent: Sendable, Hashable, Codable {
    /// The relay's callback id; also the `push_id` of the additional data.
    public var callbackID: String
    /// Which push of this callback (1 for the first, 2 after a snooze …); also bound into the
    /// additional data, so an earlier push cannot be replayed as a later one.
    public var sequence: UInt16
    /// The contact center's service id (GMS `_id`).
    public var serviceID: String
    public var dialog: CallbackDialog
    /// When the relay pushed it, in milliseconds since the Unix epoch.
    public var pushedAt: Int64

    enum CodingKeys: String, CodingKey {
        case callbackID = "callback_id"
        case sequence
        case serviceID = "service_id"
        case dialog
        case pushedAt = "pushed_at"
    }

    /// Bytes of the encoding that are not strings: type, flags, time, sequence, four string
    /// lengths, the action count.
    static let fixedLength = 1 + 1 + 8 + 2 + 4 * 2 + 1
    /// Bytes per action that are not strings: two lengths, kind, delay.
    static let actionFixedLength = 2 * 2 + 1 + 4

    /// The length of this callback's plaintext encoding.
    public var encodedLength: Int {
        Self.fixedLength + callbackID.utf8.count + serviceID.utf8.count + dialog.title.utf8.count
            + dialog.text.utf8.count
            + dialog.actions.reduce(0) {
                $0 + Self.actionFixedLength + $1.id.utf8.count + $1.label.utf8.count
            }
    }

    /// ```
    /// 0x04 ‖ flags(1, zero) ‖ pushedAt(i64be ms) ‖ str callbackID ‖ sequence(u16be) ‖ str serviceID
    ///      ‖ str title ‖ str text ‖ count(u8) ‖ count × (str id ‖ str label ‖ kind(u8) ‖ delay(u32be s))
    /// ```
    func encoded() throws(HeraldCryptoError) -> [UInt8] {
        guard dialog.actions.count <= Int(UInt8.max) else { throw .fieldTooLong }
        var writer = ByteWriter(capacity: encodedLength)
        writer.append(PushKind.callback.rawValue)
        writer.append(UInt8(0))
        writer.append(pushedAt)
        try writer.appendString(callbackID)
        writer.append(UInt8(truncatingIfNeeded: sequence >> 8))
        writer.append(UInt8(truncatingIfNeeded: sequence))
        try writer.appendString(serviceID)
        try writer.appendString(dialog.title)
        try writer.appendString(dialog.text)
        writer.append(UInt8(dialog.actions.count))
        for action in dialog.actions {
            guard action.delaySeconds >= 0, action.delaySeconds <= Int(UInt32.max) else { throw .fieldTooLong }
            try writer.appendString(action.id)
            try writer.appendString(action.label)
            writer.append(action.kind.code)
            let delay = UInt32(action.delaySeconds)
            for shift in stride(from: 24, through: 0, by: -8) {
                writer.append(UInt8(truncatingIfNeeded: delay >> UInt32(shift)))
            }
        }
        return writer.bytes
    }

    /// Reads what follows the type, flags and time.
    init(reading reader: inout ByteReader, flags: UInt8, time: Int64) throws(HeraldCryptoError) {
        callbackID = try reader.readString()
        sequence = UInt16(try reader.readByte()) << 8 | UInt16(try reader.readByte())
        serviceID = try reader.readString()
        let title = try reader.readString()
        let text = try reader.readString()
        let count = Int(try reader.readByte())
        var actions: [CallbackAction] = []
        for _ in 0..<count {
            let id = try reader.readString()
            let label = try reader.readString()
            guard let kind = CallbackActionKind(code: try reader.readByte()) else { throw .malformedContent }
            var delay: UInt32 = 0
            for _ in 0..<4 { delay = delay << 8 | UInt32(try reader.readByte()) }
            actions.append(CallbackAction(id: id, label: label, kind: kind, delaySeconds: Int(delay)))
        }
        dialog = CallbackDialog(title: title, text: text, actions: actions)
        pushedAt = time
    }
}
