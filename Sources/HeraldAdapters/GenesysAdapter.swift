import HeraldRelayAPI

/// Genesys Cloud `v2.conversations.{id}.messages` notification events, as the Notification
/// Service channel delivers them (`{topicName, eventBody, metadata}`) or wrapped by Amazon
/// EventBridge (`{"detail-type", "source", "detail": {topicName, eventBody}}`).
///
/// The wildcard subscription fires for every message of every participant. Only what an agent
/// wrote to the customer becomes a push: `direction` `outbound`, `type` `Text` or `Structured`,
/// written by a person (`fromUser` present, `originatingEntity` not `Bot`). Everything else —
/// customer → agent, bot and system messages, receipts, typing events — is ignored with its
/// reason (and counted by the caller).
public enum GenesysEvents: ContactCenterEvents {
    public static let name = "genesys"

    public static func decide(_ body: [UInt8]) throws(AdapterError) -> AdapterDecision {
        var event = try JSONFields.parse(body)
        if let detail = try event.optionalObject("detail") { event = detail }
        let topic = try event.string("topicName")
        let eventBody = try event.object("eventBody")
        // Every field the decision needs is read before deciding: a broken event is a 400 whole.
        let direction = try eventBody.optionalString("direction")
        let type = try eventBody.optionalString("type")
        let originatingEntity = try eventBody.optionalString("originatingEntity")
        let fromUser = try eventBody.optionalObject("fromUser")
        let agentID = try fromUser?.optionalString("id")
        let agentName = try fromUser?.optionalString("name")
        let toAddress = try eventBody.optionalString("toAddress")
        let messageID = try eventBody.optionalString("id")
        let text = try eventBody.optionalString("textBody")
        let conversation = try eventBody.optionalString("conversationId")

        let parts = topic.split(separator: ".")
        guard parts.count == 4, parts[0] == "v2", parts[1] == "conversations", parts[3] == "messages" else {
            return .ignored(reason: "topic \(topic) is not a conversation's messages")
        }
        if let ignored = ignoredDirection(direction) { return ignored }
        guard type == "Text" || type == "Structured" else { return .ignored(reason: "type \(type ?? "none")") }
        guard originatingEntity != "Bot" else { return .ignored(reason: "bot message") }
        guard let agentID else { return .ignored(reason: "system message (no agent)") }
        guard let toAddress, !toAddress.isEmpty else { throw AdapterError(field: "eventBody.toAddress", "is missing") }
        guard let messageID, !messageID.isEmpty else { throw AdapterError(field: "eventBody.id", "is missing") }
        let words = text ?? ""
        guard !words.isEmpty || type == "Structured" else {
            throw AdapterError(field: "eventBody.textBody", "is missing")
        }
        let shown = words.isEmpty ? "New message" : words
        let inConversation = conversation ?? String(parts[2])
        return agentMessage(messageID, to: toAddress, from: (agentID, agentName), in: inConversation, text: shown)
    }
}

/// The Genesys Cloud adapter (`GenesysEvents`).
public typealias GenesysAdapter = PlatformAdapter<GenesysEvents>
