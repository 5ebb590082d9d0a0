/// The push options a message names (docs/relay.md, "Push options"), and a broadcast for every
/// member's pushes: fields of the request body itself, which the two requests share.
public struct MessagePushFields: Sendable, Codable, Hashable {
    /// APNs priority, 5 (default) or 10 (docs/relay.md, "Push options").
    public var priority: Int?
    /// Seconds from now the push may still be delivered; 0 is "now or never". The app's
    /// `message_ttl` when absent.
    public var expiration: Int64?
    /// The app icon's badge (APNs `aps.badge`; FCM data `badge`), in clear.
    public var badge: Int?
    /// The notification category or push tag (APNs `aps.category`; FCM data `category`), in clear.
    public var category: String?
    /// Custom data sent in clear next to the sealed envelope (APNs top-level keys; FCM data).
    public var publicData: [String: String]?
    /// A per-message notification title, sealed: the extension shows it; the lock screen's clear
    /// title stays the app's generic one.
    public var title: String?
    /// Custom data sealed for the app with the message.
    public var data: [String: String]?

    /// None: the app's defaults (`message_priority`, `message_ttl`), nothing in clear or sealed
    /// beside the message. Set the ones a message names.
    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case priority, expiration, badge, category
        case publicData = "public_data"
        case title, data
    }

    /// The other fields a message and a broadcast share: sender, conversation, text and
    /// idempotency key.
    enum MessageKeys: String, CodingKey, CaseIterable {
        case from, conversation, text
        case idempotencyKey = "idempotency_key"
    }

    /// What a message and a broadcast share, read from the body.
    static func message(
        from decoder: any Decoder
    ) throws -> (Party, String, String, String?, MessagePushFields) {
        let container = try decoder.container(keyedBy: MessageKeys.self)
        return (
            try container.decode(Party.self, forKey: .from),
            try container.decode(String.self, forKey: .conversation),
            try container.decode(String.self, forKey: .text),
            try container.decodeIfPresent(String.self, forKey: .idempotencyKey),
            try MessagePushFields(from: decoder)
        )
    }

    /// Writes what a message and a broadcast share into the body.
    func encode(
        message: (from: Party, conversation: String, text: String, idempotencyKey: String?),
        to encoder: any Encoder
    ) throws {
        var container = encoder.container(keyedBy: MessageKeys.self)
        try container.encode(message.from, forKey: .from)
        try container.encode(message.conversation, forKey: .conversation)
        try container.encode(message.text, forKey: .text)
        try container.encodeIfPresent(message.idempotencyKey, forKey: .idempotencyKey)
        try encode(to: encoder)
    }
}
