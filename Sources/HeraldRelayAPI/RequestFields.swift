public import HeraldEncoding

// The fields of every request body the relay takes, for `JSONBody` to refuse a key that is not
// one (`idempotency_ky`): each type's `CodingKeys`, and where a field is an object of its own,
// that object's fields. Maps of the sender's own keys (`public_data`, `data`) take any key.

extension Party: KnownJSONFields {
    public static let jsonFields = JSONFields.object(CodingKeys.self)
}

extension MessagePushFields {
    /// The fields a message and a broadcast share: the push options and the message itself.
    static let sharedJSONFields = JSONFields.object(CodingKeys.self)
        .merging(.object(MessageKeys.self, nested: ["from": Party.jsonFields]))
}

extension MessageRequest: KnownJSONFields {
    public static let jsonFields = JSONFields.object(CodingKeys.self).merging(MessagePushFields.sharedJSONFields)
}

extension BroadcastRequest: KnownJSONFields {
    public static let jsonFields = JSONFields.object(CodingKeys.self).merging(MessagePushFields.sharedJSONFields)
}

extension CallRequest: KnownJSONFields {
    public static let jsonFields = JSONFields.object(CodingKeys.self, nested: ["from": Party.jsonFields])
}

extension WebPushSubscriptionBody: KnownJSONFields {
    public static let jsonFields = JSONFields.object(CodingKeys.self, nested: ["keys": .object(Keys.CodingKeys.self)])
}

extension ActivationRequest: KnownJSONFields {
    public static let jsonFields = JSONFields.object(
        CodingKeys.self,
        nested: ["subscription": WebPushSubscriptionBody.jsonFields]
    )
}

extension TokenUpdateRequest: KnownJSONFields {
    public static let jsonFields = JSONFields.object(
        CodingKeys.self,
        nested: ["subscription": WebPushSubscriptionBody.jsonFields]
    )
}

extension HeartbeatRequest: KnownJSONFields {
    public static let jsonFields = JSONFields.object(CodingKeys.self)
}

extension NotificationPermissionRequest: KnownJSONFields {
    public static let jsonFields = JSONFields.object(CodingKeys.self)
}

extension ReceiptRequest: KnownJSONFields {
    public static let jsonFields = JSONFields.object(CodingKeys.self)
}

extension ChatEventRequest: KnownJSONFields {
    public static let jsonFields = JSONFields.object(CodingKeys.self, nested: ["from": Party.jsonFields])
}

extension ChatDisconnectRequest: KnownJSONFields {
    public static let jsonFields = JSONFields.object(CodingKeys.self)
}

extension CallbackRequest: KnownJSONFields {
    public static let jsonFields = JSONFields.object(
        CodingKeys.self,
        nested: [
            "dialog": .object(
                Dialog.CodingKeys.self,
                nested: ["actions": .array(of: .object(Action.CodingKeys.self))]
            )
        ]
    )
}
