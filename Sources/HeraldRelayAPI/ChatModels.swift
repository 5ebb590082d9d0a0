import HeraldMacros

/// `POST /v1/chats/{conversation}/events`: one transcript event.
@MemberwiseInit
public struct ChatEventRequest: Sendable, Codable, Hashable {
    /// The customer the chat is with.
    public var to: String
    /// `Message.Text`, `Notice.TypingStarted`, `Notice.Joined`, `Notice.Left`, `Notice.Custom`, …
    public var type: String
    public var from: Party
    public var text: String?
    /// Written by the agent's side (default); the customer's own events never push.
    public var fromAgent: Bool?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case to, type, from, text
        case fromAgent = "from_agent"
    }
}

/// What a transcript event did.
@MemberwiseInit
public struct ChatEventReceipt: Sendable, Codable, Hashable {
    public var position: Int
    /// Pushes queued now (devices whose first push was already sent, or a zero delay).
    public var pushes: [IngestReceipt.Push]
    /// Devices whose first push waits for the delay.
    public var scheduled: [String]
    /// The event type is filtered (or not the agent's): no push.
    public var filtered: Bool

    enum CodingKeys: String, CodingKey {
        case position, pushes, scheduled, filtered
    }
}

/// One transcript event as the app sees it.
@MemberwiseInit
public struct TranscriptEventView: Sendable, Codable, Hashable {
    public var position: Int
    public var type: String
    public var from: Party
    public var fromAgent: Bool
    public var text: String
    public var at: Int64

    enum CodingKeys: String, CodingKey {
        case position, type, from
        case fromAgent = "from_agent"
        case text, at
    }
}

/// `GET /v1/chats/{conversation}/transcript` and the answer of a reconnect.
@MemberwiseInit
public struct TranscriptView: Sendable, Codable, Hashable {
    public var conversation: String
    public var events: [TranscriptEventView]
}

/// `POST /v1/devices/{id}/chats/{conversation}/disconnect`: the app goes to the background.
@MemberwiseInit
public struct ChatDisconnectRequest: Sendable, Codable, Hashable {
    /// The highest transcript position the app has seen.
    public var transcriptPosition: Int

    enum CodingKeys: String, CodingKey, CaseIterable {
        case transcriptPosition = "transcript_position"
    }
}

/// `POST /v1/chats/{conversation}/end`: the chat ended.
@MemberwiseInit
public struct ChatEndReceipt: Sendable, Codable, Hashable {
    public var conversation: String
    /// When the chat ended (milliseconds since the epoch): now, or earlier if it had already
    /// ended or had been idle past the relay's idle end.
    public var endedAt: Int64
    /// When retention deletes its transcript and disconnects (milliseconds since the epoch; the
    /// janitor runs every ten minutes).
    public var purgeAt: Int64

    enum CodingKeys: String, CodingKey {
        case conversation
        case endedAt = "ended_at"
        case purgeAt = "purge_at"
    }
}
