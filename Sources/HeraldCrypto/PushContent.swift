import HeraldMacros

/// The content of a messaging push, sealed for one device.
public struct MessageContent: Sendable, Hashable, Codable {
    /// The relay's message id; also bound into the envelope's additional data.
    public var messageID: String
    /// The conversation (thread) the message belongs to.
    public var conversationID: String
    /// The sender's id (an agent, a user). Empty under the "none" content policy.
    public var senderID: String
    /// The sender's display name.
    public var senderName: String
    /// The message text; empty under the "sender only" policy; possibly cut to fit the budget.
    public var text: String
    /// When the message was sent, in milliseconds since the Unix epoch.
    public var sentAt: Int64
    /// The text was cut to fit the payload budget; the app fetches the whole message by id.
    public var truncated: Bool
    /// A per-message notification title, shown by the extension instead of the sender's name;
    /// sealed, never on the lock screen in clear.
    public var title: String?
    /// Custom data the backend sealed for the app (deep-link parameters and the like).
    public var data: [String: String]?

    public init(
        messageID: String,
        conversationID: String,
        senderID: String,
        senderName: String,
        text: String,
        sentAt: Int64,
        truncated: Bool = false,
        title: String? = nil,
        data: [String: String]? = nil
    ) {
        self.title = title
        self.data = data
        self.messageID = messageID
        self.conversationID = conversationID
        self.senderID = senderID
        self.senderName = senderName
        self.text = text
        self.sentAt = sentAt
        self.truncated = truncated
    }

    enum CodingKeys: String, CodingKey {
        case messageID = "message_id"
        case conversationID = "conversation_id"
        case senderID = "sender_id"
        case senderName = "sender_name"
        case text
        case sentAt = "sent_at"
        case truncated, title, data
    }
}

/// Audio or video, as the caller asked.
public enum CallMedia: String, Sendable, Hashable, Codable, CaseIterable {
    case audio
    case video
}

/// The content of a call push, sealed for one device.
@MemberwiseInit
public struct CallContent: Sendable, Hashable, Codable {
    /// The call id; also bound into the envelope's additional data.
    public var callID: String
    /// The caller's id.
    public var callerID: String
    /// The caller's display name, shown by CallKit.
    public var callerName: String
    /// Audio or video.
    public var media: CallMedia
    /// When the call started ringing at the backend, in milliseconds since the Unix epoch.
    public var startedAt: Int64

    enum CodingKeys: String, CodingKey {
        case callID = "call_id"
        case callerID = "caller_id"
        case callerName = "caller_name"
        case media
        case startedAt = "started_at"
    }
}

/// Either content, as the plaintext of an envelope.
public enum PushContent: Sendable, Hashable {
    case message(MessageContent)
    case call(CallContent)
    /// A missed-call alert: the call nobody answered, with its caller, under its own kind
    /// (`PushKind.missedCall`, bound into the additional data) so that a sealed call cannot be
    /// replayed as a missed call, nor a missed call as a call or a message.
    case missedCall(CallContent)
    /// A callback's dialog (PushContent+Callback.swift).
    case callback(CallbackContent)

    /// The push kind, bound into the additional data.
    public var kind: PushKind {
        switch self {
        case .message: .message
        case .call: .call
        case .missedCall: .missedCall
        case .callback: .callback
        }
    }

    /// The message id or the call id.
    public var pushID: String {
        switch self {
        case .message(let message): message.messageID
        case .call(let call): call.callID
        case .missedCall(let missed): missed.callID
        case .callback(let callback): callback.callbackID
        }
    }

    /// A callback's push number, bound into its additional data; zero for the other kinds.
    public var sequence: UInt16 {
        if case .callback(let callback) = self { return callback.sequence }
        return 0
    }
}
