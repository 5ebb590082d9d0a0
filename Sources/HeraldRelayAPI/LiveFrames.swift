import Foundation
public import HeraldDomain

/// What the relay writes on a device's live channel, one JSON text frame each, told apart by
/// `type`.
public enum LiveServerFrame: Sendable, Hashable {
    /// `{"type":"message","message_id","conversation","from":{"id","name"},"text","sent_at"}`:
    /// the device acknowledges it with an `ack`.
    case message(LiveMessage)
    /// `{"type":"call.stop","call_id","reason","state"}`: stop ringing (another device answered
    /// or declined, the caller hung up, nobody answered); CallKit ends the call with the reason.
    case callStop(callID: String, reason: CallStopReason, state: CallState)
    /// `{"type":"call.state","call_id","state","device_id"?,"accepted"}`: the answer to the
    /// device's own `call.ringing`, `call.answer` or `call.decline`; `accepted` is false when the
    /// call had ended already (`device_id` then names who answered or declined).
    case callState(callID: String, state: CallState, deviceID: String?, accepted: Bool)
    /// `{"type":"chat_event","conversation","event":{"position","type","from","from_agent","text","at"}}`:
    /// an event shown to the customer was added to a chat's transcript; `event` is what
    /// `GET /v1/chats/{conversation}/transcript` answers for it. Not acknowledged: an app that
    /// sees a gap in the positions resyncs with `after`.
    case chatEvent(conversation: String, event: TranscriptEventView)

    /// The frame's JSON text.
    public func jsonText() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var object: [String: Any]
        switch self {
        case .message(let message):
            object = try JSONSerialization.jsonObject(with: try encoder.encode(message)) as? [String: Any] ?? [:]
            object["type"] = "message"
        case .callStop(let callID, let reason, let state):
            object = ["type": "call.stop", "call_id": callID, "reason": reason.rawValue, "state": state.rawValue]
        case .callState(let callID, let state, let deviceID, let accepted):
            object = ["type": "call.state", "call_id": callID, "state": state.rawValue, "accepted": accepted]
            if let deviceID { object["device_id"] = deviceID }
        case .chatEvent(let conversation, let event):
            let encoded = try JSONSerialization.jsonObject(with: try encoder.encode(event))
            object = ["type": "chat_event", "conversation": conversation, "event": encoded]
        }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads a frame the relay wrote; `nil` for a type this version does not know.
    public init?(jsonText text: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let type = object["type"] as? String
        else { return nil }
        switch type {
        case "message":
            guard let message = try? JSONDecoder().decode(LiveMessage.self, from: Data(text.utf8)) else { return nil }
            self = .message(message)
        case "call.stop":
            guard let callID = object["call_id"] as? String,
                let reason = (object["reason"] as? String).flatMap(CallStopReason.init(rawValue:)),
                let state = (object["state"] as? String).flatMap(CallState.init(rawValue:))
            else { return nil }
            self = .callStop(callID: callID, reason: reason, state: state)
        case "call.state":
            guard let callID = object["call_id"] as? String,
                let state = (object["state"] as? String).flatMap(CallState.init(rawValue:))
            else { return nil }
            self = .callState(
                callID: callID,
                state: state,
                deviceID: object["device_id"] as? String,
                accepted: object["accepted"] as? Bool ?? false
            )
        case "chat_event":
            guard let conversation = object["conversation"] as? String,
                let event = object["event"].flatMap({ try? JSONSerialization.data(withJSONObject: $0) }),
                let decoded = try? JSONDecoder().decode(TranscriptEventView.self, from: event)
            else { return nil }
            self = .chatEvent(conversation: conversation, event: decoded)
        default:
            return nil
        }
    }
}

/// What a device writes on its live channel.
public enum LiveClientFrame: Sendable, Hashable {
    /// `{"type":"presence","state":"active","conversation":"c"}` (or `"state":"background"`).
    case presence(activeIn: String?)
    /// `{"type":"ack","message_id":"…"}`: the app has the message.
    case ack(messageID: String)
    /// `{"type":"call.ringing","call_id":"…"}`: the call shows (CallKit, the incoming-call screen).
    case callRinging(callID: String)
    /// `{"type":"call.answer","call_id":"…"}`
    case callAnswer(callID: String)
    /// `{"type":"call.decline","call_id":"…"}`
    case callDecline(callID: String)

    /// Reads a device's frame; `nil` for one that is not JSON, lacks its fields, or has a type
    /// this version does not know (ignored, so newer apps can talk to older relays).
    public init?(jsonText text: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let type = object["type"] as? String
        else { return nil }
        switch type {
        case "presence":
            self = .presence(activeIn: object["state"] as? String == "active" ? object["conversation"] as? String : nil)
        case "ack":
            guard let id = object["message_id"] as? String else { return nil }
            self = .ack(messageID: id)
        case "call.ringing", "call.answer", "call.decline":
            guard let id = object["call_id"] as? String else { return nil }
            self =
                switch type {
                case "call.ringing": .callRinging(callID: id)
                case "call.answer": .callAnswer(callID: id)
                default: .callDecline(callID: id)
                }
        default:
            return nil
        }
    }

    /// The frame's JSON text.
    public func jsonText() -> String {
        let object: [String: String] =
            switch self {
            case .presence(let conversation?): ["type": "presence", "state": "active", "conversation": conversation]
            case .presence(nil): ["type": "presence", "state": "background"]
            case .ack(let id): ["type": "ack", "message_id": id]
            case .callRinging(let id): ["type": "call.ringing", "call_id": id]
            case .callAnswer(let id): ["type": "call.answer", "call_id": id]
            case .callDecline(let id): ["type": "call.decline", "call_id": id]
            }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
