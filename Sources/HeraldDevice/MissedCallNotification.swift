import HeraldCrypto
import HeraldDomain

/// The missed-call alert on the phone: the generic "Missed call" until the extension (Android:
/// the messaging service) opens the sealed caller, then "Missed call" from the caller, threaded
/// under the call. Opened as `PushKind.missedCall`, so a sealed message or call does not open as
/// one (nor a missed call as a message: a clear `kind` rewritten is refused by the envelope).
extension DisplayedNotification {
    /// The lock-screen text an Android app ships for a missed call it cannot open.
    static let missedCallTitle = "Missed call"
    static let missedCallBody = "You missed a call"

    /// A missed call's notification, from its opened content, for the push `pushID`.
    static func missedCall(_ call: CallContent, pushID: String?, at time: Int64) -> DisplayedNotification {
        var shown = DisplayedNotification(
            title: missedCallTitle,
            body: call.callerName + (call.media == .video ? " (video)" : ""),
            thread: "call:" + call.callID,
            messageID: nil,
            conversationID: nil,
            fetchOnTap: false,
            shownAt: time
        )
        shown.pushID = pushID
        return shown
    }
}

extension NotificationServiceEmulator {
    /// An alert whose clear `herald.kind` is `missed_call`.
    func openMissedCall(herald: [String: Any], original: DisplayedNotification) -> ServiceExtensionResult {
        guard let callID = herald["call_id"] as? String, let sealed = herald["sealed"] as? String else {
            return failed(original, "the missed call carries no call id or no sealed content", .malformed)
        }
        let content: PushContent
        do {
            content = try store.open(sealed: sealed, kind: .missedCall, subjectID: callID)
        } catch {
            return failed(original, error.detail, error.unopened ?? .malformed)
        }
        guard case .missedCall(let call) = content else {
            return failed(original, "the sealed content is not a missed call", .malformed)
        }
        if let repeated = repeated(.missedCall, call.callID) { return repeated }
        return ServiceExtensionResult(
            notification: .missedCall(call, pushID: original.pushID, at: original.shownAt),
            ranExtension: true,
            opened: true,
            diagnostic: nil
        )
    }
}

extension FirebaseMessagingServiceEmulator {
    /// A data message whose `kind` is `missed_call`.
    func missedCall(_ data: [String: String]) -> Outcome {
        let unopened = generic(
            data,
            title: DisplayedNotification.missedCallTitle,
            body: DisplayedNotification.missedCallBody
        )
        guard let callID = data["call_id"], let sealed = data["sealed"] else {
            return .notification(
                unopened,
                opened: false,
                diagnostic: "the missed call carries no call id or no sealed content",
                failure: .malformed
            )
        }
        do {
            guard case .missedCall(let call) = try store.open(sealed: sealed, kind: .missedCall, subjectID: callID)
            else {
                return .notification(
                    unopened,
                    opened: false,
                    diagnostic: "the sealed content is not a missed call",
                    failure: .malformed
                )
            }
            if let repeated = repeated(.missedCall, call.callID) { return repeated }
            return .notification(
                .missedCall(call, pushID: unopened.pushID, at: unopened.shownAt),
                opened: true,
                diagnostic: nil
            )
        } catch {
            return .notification(
                unopened,
                opened: false,
                diagnostic: error.detail,
                failure: error.unopened ?? .malformed
            )
        }
    }
}
