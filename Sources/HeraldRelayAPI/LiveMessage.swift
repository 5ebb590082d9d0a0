/// A message sent over a device's live channel.
public struct LiveMessage: Sendable, Hashable, Codable {
    public var messageID: String
    public var conversation: String
    public var from: Party
    public var text: String
    /// Milliseconds since the epoch.
    public var sentAt: Int64

    public init(
        messageID: String,
        conversation: String,
        from: Party,
        text: String,
        sentAt: Int64
    ) {
        self.messageID = messageID
        self.conversation = conversation
        self.from = from
        self.text = text
        self.sentAt = sentAt
    }

    enum CodingKeys: String, CodingKey {
        case messageID = "message_id"
        case conversation, from, text
        case sentAt = "sent_at"
    }
}
