import HeraldRelayAPI

/// NICE CXone Digital contact events delivered to an Event Destination webhook:
/// `{"contactEvent": {"type": "ChatMessageReceived", …}}`.
///
/// Only `ChatMessageReceived` events for a message an agent sent to the customer become pushes:
/// `direction` `outbound` with an `authorUser` (a person, not a bot or the system) and text
/// content. Other event types, inbound messages and messages without an agent are ignored with
/// their reason.
public enum CXoneEvents: ContactCenterEvents {
    public static let name = "cxone"

    public static func decide(_ body: [UInt8]) throws(AdapterError) -> AdapterDecision {
        let event = try JSONFields.parse(body).object("contactEvent")
        let type = try event.string("type")
        let direction = try event.optionalString("direction")
        let author = try event.optionalObject("authorUser")
        let agentID = try author?.optionalString("id")
        let agentName = try author?.optionalString("name")
        let endUser = try event.optionalObject("endUserIdentity")
        let customer = try endUser?.optionalString("idOnExternalPlatform")
        let messageID = try event.optionalString("messageId")
        let caseID = try event.optionalString("caseId")
        let content = try event.optionalObject("messageContent")
        let contentType = try content?.optionalString("type")
        let text = try content?.optionalObject("payload")?.optionalString("text")

        guard type == "ChatMessageReceived" else { return .ignored(reason: "event type \(type)") }
        if let ignored = ignoredDirection(direction) { return ignored }
        guard let agentID else { return .ignored(reason: "no agent (bot or system message)") }
        guard contentType == nil || contentType == "TEXT" else {
            return .ignored(reason: "content type \(contentType ?? "none")")
        }
        guard let customer, !customer.isEmpty else {
            throw AdapterError(field: "contactEvent.endUserIdentity.idOnExternalPlatform", "is missing")
        }
        guard let messageID, !messageID.isEmpty else {
            throw AdapterError(field: "contactEvent.messageId", "is missing")
        }
        guard let caseID, !caseID.isEmpty else { throw AdapterError(field: "contactEvent.caseId", "is missing") }
        guard let text, !text.isEmpty else {
            throw AdapterError(field: "contactEvent.messageContent.payload.text", "is missing")
        }
        return agentMessage(messageID, to: customer, from: (agentID, agentName), in: caseID, text: text)
    }
}

/// The CXone adapter (`CXoneEvents`).
public typealias CXoneAdapter = PlatformAdapter<CXoneEvents>
