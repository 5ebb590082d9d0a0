import Foundation
public import HeraldDomain
import HeraldRelayAPI

// MARK: The user

/// What the user does with the phone (taps, where they are) and how a notification reads to them.
extension EmulatedPhone {
    /// The user taps a notification: the conversation opens, with the message fetched from the
    /// relay when the push did not carry it whole. The app reports the tap with a `tapped`
    /// receipt for the push the notification came with (once per push; one the relay does not
    /// take is a diagnostic, never a failed tap). Returns the text shown.
    @discardableResult
    public func tap(_ notification: DisplayedNotification) async throws -> String {
        timeline.record(
            "user",
            "app",
            "notification tapped",
            detail: notification.thread.map { "thread \($0)" },
            subject: notification.messageID,
            stage: .acted,
            userSees: Self.seen(notification)
        )
        // A terminated app launches (and resyncs), one in the background comes back.
        try await appOpened(by: notification.conversationID)
        // As iOS's `userNotificationCenter(_:didReceive:)` or Android's content intent, in the
        // app it opened: the tap is reported before the conversation loads.
        if let pushID = tapReceipt(for: notification) {
            await sendReceipts(pushID: pushID, [(.tapped, nil)], subject: notification.messageID)
        }
        var text = notification.body
        if notification.fetchOnTap, let id = notification.messageID, let registration = store.registration(),
            let credential = store.credential()
        {
            let message = try await http.message(relay: registration.relayURL, id: id, credential: credential)
            timeline.record(
                "app",
                "relay",
                "message fetched by id",
                detail: "GET /v1/messages/\(id)",
                subject: id,
                stage: .acted
            )
            text = message.text
        }
        timeline.record(
            "app",
            "user",
            "conversation opened",
            detail: "conversation \(notification.conversationID ?? notification.thread ?? "?")",
            subject: notification.messageID,
            stage: .acted,
            userSees: text
        )
        return text
    }

    /// Tells the relay where the user is (a heartbeat).
    public func presence(_ state: PresenceState, conversation: String? = nil, ttl: Int? = nil) async throws {
        guard let registration = store.registration(), let credential = store.credential() else {
            throw DeviceError.store("the phone is not activated yet")
        }
        try await http.heartbeat(
            relay: registration.relayURL,
            deviceID: registration.deviceID,
            HeartbeatRequest(conversation: conversation, state: state, ttl: ttl),
            credential: credential
        )
        timeline.record(
            "app",
            "relay",
            "presence: \(state.rawValue)",
            detail: conversation.map { "conversation \($0)" }
        )
    }

    /// What the user reads on a notification: sender (its title) and text.
    static func seen(_ notification: DisplayedNotification) -> String {
        (notification.title.isEmpty ? "" : notification.title + ": ") + notification.body
    }

    /// The message, call or callback push a Herald APNs payload names (`herald.message_id`,
    /// `herald.call_id`, `herald.callback_id` with `herald.push`), read without opening anything.
    static func subject(ofPayload payload: String) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
            let herald = object["herald"] as? [String: Any]
        else { return nil }
        if let callback = herald["callback_id"] as? String, let push = herald["push"] as? Int,
            let sequence = UInt16(exactly: push)
        {
            return callbackSubject(callback, sequence)
        }
        // A missed-call alert is a push of its own after the call's: named apart from the call.
        if herald["kind"] as? String == "missed_call", let call = herald["call_id"] as? String {
            return "missed-call:" + call
        }
        return herald["message_id"] as? String ?? herald["call_id"] as? String
    }

    /// The line a person reads for a notification.
    public static func describe(_ notification: DisplayedNotification) -> String {
        let thread = notification.thread.map { "[\($0)] " } ?? ""
        return thread + (notification.title.isEmpty ? "" : notification.title + ": ") + notification.body
    }
}
