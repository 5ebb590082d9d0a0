public import HeraldPush

/// The RFC 8030 headers of one push request: how long the push service keeps the message
/// (`TTL`), how soon the device should wake (`Urgency`), and which kept message it replaces
/// (`Topic`).
public struct WebPushRequest: Sendable, Hashable {
    /// The longest `TTL` a sender asks for: four weeks, FCM's cap (Mozilla caps at 60 days).
    public static let maxTTL = 2_419_200
    /// The longest `Topic` (RFC 8030 §5.4: 32 characters of the base64url alphabet).
    public static let maxTopicLength = 32

    /// `TTL` in seconds, 0…2,419,200; 0 asks for delivery now or never.
    public let ttl: Int
    public let urgency: WebPushUrgency
    /// `Topic`: a newer message with the same topic replaces one the service still keeps.
    public let topic: String?

    /// The request, checked: `ttl` in range (`ttl`), `topic` at most 32 base64url characters
    /// (`topic`).
    public init(ttl: Int, urgency: WebPushUrgency = .normal, topic: String? = nil) throws(WebPushError) {
        guard (0...Self.maxTTL).contains(ttl) else {
            throw .invalid("ttl", "must be between 0 and \(Self.maxTTL) seconds")
        }
        if let topic, !Self.isValidTopic(topic) {
            throw .invalid("topic", "must be 1 to 32 characters of the base64url alphabet")
        }
        self.ttl = ttl
        self.urgency = urgency
        self.topic = topic
    }

    /// Whether `topic` is a `Topic` header value RFC 8030 §5.4 allows.
    public static func isValidTopic(_ topic: String) -> Bool {
        !topic.isEmpty && topic.utf8.count <= maxTopicLength
            && topic.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default: false
                }
            }
    }

    /// A `TTL` header value: a whole number of seconds, 0 or more (RFC 8030 §5.2: delta-seconds);
    /// nil for anything else.
    public static func ttl(header: String) -> Int? {
        let trimmed = header.trimmingWhitespace()
        guard !trimmed.isEmpty, trimmed.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        // Past Int's range is still a valid delta-seconds: as long as can be.
        return Int(trimmed) ?? Int.max
    }

    /// The headers the sender sets besides `Authorization` and `Content-Length`: `TTL`,
    /// `Urgency`, `Topic` (when there is one), `Content-Encoding: aes128gcm` and
    /// `Content-Type: application/octet-stream`.
    public static func headers(for request: WebPushRequest) -> [(String, String)] {
        var headers = [("TTL", String(request.ttl)), ("Urgency", request.urgency.rawValue)]
        if let topic = request.topic { headers.append(("Topic", topic)) }
        headers.append(("Content-Encoding", "aes128gcm"))
        headers.append(("Content-Type", "application/octet-stream"))
        return headers
    }

    /// `WebPushRequest.headers(for: self)`.
    public var headers: [(String, String)] { Self.headers(for: self) }
}

extension String {
    /// The text without leading and trailing spaces and tabs (HTTP's optional whitespace).
    func trimmingWhitespace() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return self[start...end]
    }
}
