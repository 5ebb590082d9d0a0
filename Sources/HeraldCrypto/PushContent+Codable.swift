/// JSON form of a push content: the fields of the message or call plus `"type"`.
extension PushContent: Codable {
    private enum TypeKey: String, CodingKey {
        case type
    }

    public init(from decoder: any Decoder) throws {
        let kind = try decoder.container(keyedBy: TypeKey.self).decode(PushKind.self, forKey: .type)
        switch kind {
        case .message: self = .message(try MessageContent(from: decoder))
        case .call: self = .call(try CallContent(from: decoder))
        case .missedCall: self = .missedCall(try CallContent(from: decoder))
        case .callback: self = .callback(try CallbackContent(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: TypeKey.self)
        try container.encode(kind, forKey: .type)
        switch self {
        case .message(let message): try message.encode(to: encoder)
        case .call(let call): try call.encode(to: encoder)
        case .missedCall(let missed): try missed.encode(to: encoder)
        case .callback(let callback): try callback.encode(to: encoder)
        }
    }
}

extension PushKind {
    /// Encoded as `"message"`, `"call"`, `"missed_call"` or `"callback"`.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let kind = PushKind.allCases.first(where: { $0.description == text }) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "push kind must be 'message', 'call', 'missed_call' or 'callback'"
                )
            )
        }
        self = kind
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
