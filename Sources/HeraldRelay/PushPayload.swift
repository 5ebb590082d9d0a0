public import HeraldCrypto
import HeraldMacros
import HeraldRelayAPI
public import HeraldStore

/// Which push a body is for: the device whose keys seal it, and the relay's id of the push, which
/// travels in clear for the phone's receipts (docs/receipts.md).
@MemberwiseInit
public struct PushTarget: Sendable, Hashable {
    public var deviceID: String
    public var pushID: String
}

/// Builds the APNs JSON bodies and FCM data messages the relay sends, with the sealed content inside the budget.
///
/// The lock-screen text is always the app's generic one: the sender and the text travel only in
/// the `herald.sealed` envelope, which the Notification Service Extension (messages) or the
/// PushKit handler (calls) opens with the device's session key.
public enum PushPayload {
    /// The body of a messaging push for one device.
    ///
    /// - Returns: the JSON body and whether the text had to be cut to fit (the app then fetches
    ///   the whole message by id).
    public static func message(
        _ content: MessageContent,
        app: AppRecord,
        for target: PushTarget,
        sealer: EnvelopeSealer,
        options: MessagePushOptions = MessagePushOptions()
    ) throws(HeraldCryptoError) -> (body: String, truncated: Bool) {
        var content = content
        switch app.contentPolicy {
        case .full: break
        case .senderOnly: content.text = ""
        case .none:
            let body = messageBody(app: app, content: content, pushID: target.pushID, sealed: nil, options: options)
            guard body.utf8.count <= PayloadBudget.apnsAlert.bodyLimit else { throw .doesNotFit }
            return (body, false)
        }
        let surrounding = messageBody(app: app, content: content, pushID: target.pushID, sealed: "", options: options)
            .utf8
            .count
        let capacity = PayloadBudget.apnsAlert.plaintextCapacity(surroundingBytes: surrounding)
        let fitted = try content.fitted(toPlaintextCapacity: capacity)
        let envelope = try sealer.seal(.message(fitted), deviceID: target.deviceID)
        return (
            messageBody(app: app, content: content, pushID: target.pushID, sealed: envelope.text, options: options),
            fitted.truncated
        )
    }

    /// The body of a call push for one device.
    public static func call(
        _ content: CallContent,
        for target: PushTarget,
        sealer: EnvelopeSealer
    ) throws(HeraldCryptoError)
        -> String
    {
        try sealedWhole(.call(content), content.encodedLength, in: .apnsVoIP, for: target.deviceID, sealer) {
            callBody(callID: content.callID, pushID: target.pushID, sealed: $0)
        }
    }

    /// An APNs body around content sealed whole (never cut): refused when the content does not
    /// fit the budget's room around `body`'s other bytes.
    static func sealedWhole(
        _ content: HeraldCrypto.PushContent,
        _ encodedLength: Int,
        in budget: PayloadBudget,
        for deviceID: String,
        _ sealer: EnvelopeSealer,
        body: (_ sealed: String) -> String
    ) throws(HeraldCryptoError) -> String {
        let surrounding = body("").utf8.count
        guard encodedLength <= budget.plaintextCapacity(surroundingBytes: surrounding) else { throw .doesNotFit }
        return body(try sealer.seal(content, deviceID: deviceID).text)
    }

    /// Data fields with content sealed whole under `sealed`: refused when the content does not
    /// fit the carrier's room around the other fields.
    static func sealedWhole(
        _ content: HeraldCrypto.PushContent,
        _ encodedLength: Int,
        into fields: [String: String],
        for deviceID: String,
        _ sealer: EnvelopeSealer,
        carrier: DataCarrier
    ) throws(HeraldCryptoError) -> [String: String] {
        var fields = fields
        guard encodedLength <= carrier.plaintextCapacity(around: fields) else { throw .doesNotFit }
        fields["sealed"] = try sealer.seal(content, deviceID: deviceID).text
        return fields
    }

    /// The data of a messaging push for one device (string keys and values): the same ids and
    /// envelope as the APNs body, for the app's messaging service (or service worker) to open and
    /// show, fitted to `carrier`'s budget.
    public static func fcmMessage(
        _ content: MessageContent,
        app: AppRecord,
        for target: PushTarget,
        sealer: EnvelopeSealer,
        options: MessagePushOptions = MessagePushOptions(),
        carrier: DataCarrier = .fcm
    ) throws(HeraldCryptoError) -> (data: [String: String], truncated: Bool) {
        var content = content
        // Custom keys first: Herald's own keys win, though ingest already refused collisions.
        var fields = options.publicData
        fields.merge(
            fcmHeader(pushID: target.pushID, kind: "message").merging([
                "message_id": content.messageID, "conversation_id": content.conversationID,
                "policy": app.contentPolicy.rawValue,
            ]) { _, new in new }
        ) { _, own in own }
        if let badge = options.badge { fields["badge"] = String(badge) }
        if let category = options.category { fields["category"] = category }
        switch app.contentPolicy {
        case .full: break
        case .senderOnly: content.text = ""
        case .none:
            guard carrier.size(of: fields) <= carrier.budget.bodyLimit else { throw .doesNotFit }
            return (fields, false)
        }
        let capacity = carrier.plaintextCapacity(around: fields)
        let fitted = try content.fitted(toPlaintextCapacity: capacity)
        fields["sealed"] = try sealer.seal(.message(fitted), deviceID: target.deviceID).text
        return (fields, fitted.truncated)
    }

    /// The data of an FCM call push for one device.
    public static func fcmCall(
        _ content: CallContent,
        for target: PushTarget,
        sealer: EnvelopeSealer,
        carrier: DataCarrier = .fcm
    ) throws(HeraldCryptoError) -> [String: String] {
        var fields = fcmHeader(pushID: target.pushID, kind: "call")
        fields["call_id"] = content.callID
        return try sealedWhole(
            .call(content),
            content.encodedLength,
            into: fields,
            for: target.deviceID,
            sealer,
            carrier: carrier
        )
    }

    static func messageBody(
        app: AppRecord,
        content: MessageContent,
        pushID: String,
        sealed: String?,
        options: MessagePushOptions = MessagePushOptions()
    ) -> String {
        var json = "{\"aps\":{\"alert\":{\"title\":"
        json += JSONText.quoted(app.alertTitle)
        json += ",\"body\":"
        json += JSONText.quoted(app.alertBody)
        json += "}"
        if let badge = options.badge { json += ",\"badge\":" + String(badge) }
        if let category = options.category { json += ",\"category\":" + JSONText.quoted(category) }
        json += ",\"mutable-content\":1,\"sound\":\"default\",\"thread-id\":"
        json += JSONText.quoted(content.conversationID)
        json += "}," + heraldHeader(pushID: pushID) + "\"kind\":\"message\",\"message_id\":"
        json += JSONText.quoted(content.messageID)
        json += ",\"conversation_id\":"
        json += JSONText.quoted(content.conversationID)
        json += ",\"policy\":"
        json += JSONText.quoted(app.contentPolicy.rawValue)
        if let sealed {
            json += ",\"sealed\":"
            json += JSONText.quoted(sealed)
        }
        json += "}"
        // Custom keys at the top level, as Apple's custom payload keys are, sorted: the same
        // data is always the same bytes.
        for (key, value) in options.publicData.sorted(by: { $0.key < $1.key }) {
            json += "," + JSONText.quoted(key) + ":" + JSONText.quoted(value)
        }
        json += "}"
        return json
    }

    static func callBody(callID: String, pushID: String, sealed: String) -> String {
        "{" + heraldHeader(pushID: pushID) + "\"kind\":\"call\",\"call_id\":" + JSONText.quoted(callID) + ",\"sealed\":"
            + JSONText.quoted(sealed) + "}}"
    }

    /// How every APNs body's `herald` object begins: the payload layout (1) and the push's id,
    /// which the phone's receipts name (docs/receipts.md). Not authenticated: a changed id only
    /// makes a receipt name a push the relay then refuses unless it was sent to that device.
    static func heraldHeader(pushID: String) -> String {
        "\"herald\":{\"v\":1,\"push_id\":" + JSONText.quoted(pushID) + ","
    }

    /// The FCM data fields every push begins with: the layout, the push's id (as `heraldHeader`)
    /// and the kind.
    static func fcmHeader(pushID: String, kind: String) -> [String: String] {
        ["v": "1", "push_id": pushID, "kind": kind]
    }

}
