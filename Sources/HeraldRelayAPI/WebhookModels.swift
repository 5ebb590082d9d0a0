import Foundation
import HeraldMacros

/// `GET /v1/webhooks/events/{id}`: one webhook event and where it is on its way to the backend.
@MemberwiseInit
public struct WebhookEventView: Sendable, Hashable, Encodable {
    public var id: String
    /// `push.delivered`, `chat.customer_offline`, …
    public var type: String
    public var app: String
    /// Events with the same key are delivered in order (`push:<id>`, `conversation:<id>`, …).
    public var orderingKey: String
    /// Milliseconds since the epoch.
    public var createdAt: Int64
    /// pending, sending, delivered or failed.
    public var state: String
    /// How many times it was sent.
    public var attempts: Int
    /// When it is sent next (while pending), milliseconds since the epoch.
    public var nextAttemptAt: Int64?
    /// Why the last attempt failed (`HTTP 503`, `connection refused` …).
    public var lastError: String?
    /// When the receiver accepted it, milliseconds since the epoch.
    public var deliveredAt: Int64?
    /// The event's `data` object, as the receiver gets it.
    public var data: WebhookJSON

    enum CodingKeys: String, CodingKey {
        case id, type, app, state, attempts, data
        case orderingKey = "ordering_key"
        case createdAt = "created_at"
        case nextAttemptAt = "next_attempt_at"
        case lastError = "last_error"
        case deliveredAt = "delivered_at"
    }
}

/// Any JSON value: a webhook event's `data` read back from its text.
public indirect enum WebhookJSON: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([WebhookJSON])
    case object([String: WebhookJSON])

    /// The value of JSON text, or `nil` when it is not JSON.
    public init?(text: String) {
        guard let value = try? JSONDecoder().decode(WebhookJSON.self, from: Data(text.utf8)) else { return nil }
        self = value
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([WebhookJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: WebhookJSON].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

/// `GET /v1/webhooks/events`: a page of an app's events, oldest first.
@MemberwiseInit
public struct WebhookEventList: Sendable, Hashable, Encodable {
    public var events: [WebhookEventView]
    /// Pass as `cursor` for the next page; absent on the last.
    public var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case events
        case nextCursor = "next_cursor"
    }
}
