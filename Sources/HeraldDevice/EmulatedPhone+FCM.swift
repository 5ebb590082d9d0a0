import Foundation
import HeraldCrypto
import HeraldDomain
import HeraldPush
import HeraldRelayAPI

extension EmulatedPhone {
    /// An FCM data message as the app's messaging service gets it: opened, shown or dropped.
    func receive(_ message: DeliveredFCMMessage) async {
        let bytes = message.data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        let subject: String?
        if message.data["kind"] == "missed_call" {
            subject = message.data["call_id"].map { "missed-call:" + $0 }
        } else if let callback = message.data["callback_id"] {
            subject = Self.callbackSubject(callback, UInt16(message.data["push"] ?? "") ?? 0)
        } else {
            subject = message.data["message_id"] ?? message.data["call_id"]
        }
        timeline.record(
            "fcm",
            "app",
            "data message delivered",
            pushType: "fcm",
            priority: .fcm(message.priority),
            topic: configuration.bundleID,
            payloadBytes: bytes,
            detail: message.collapseKey.map { "collapse key \($0)" },
            subject: subject,
            stage: .delivered
        )
        if notificationsDenied, message.data["kind"] != "call" {
            withheld(by: "fcm-service", subject: subject)
            return
        }
        if message.data["kind"] == "callback" {
            await handleCallback(
                messagingService.onCallbackReceived(message.data),
                component: "fcm-service",
                subject: message.data["callback_id"]
            )
            return
        }
        switch messagingService.onMessageReceived(message.data) {
        case .notification(let shown, let opened, let diagnostic, let failure):
            timeline.record(
                "app",
                "fcm-service",
                opened ? "messaging service opened the sealed content" : "messaging service kept the generic content",
                detail: diagnostic,
                subject: subject,
                stage: .opened
            )
            if let diagnostic { record(diagnostic: diagnostic) }
            show(shown, from: "fcm-service", subject: subject)
            await sendReceipts(
                pushID: message.data["push_id"],
                Self.receiptStages(opened: opened, shown: true, failure: failure),
                subject: subject
            )
        case .call(let callID, let callerName, let video, let diagnostic):
            timeline.record(
                "app",
                "fcm-service",
                "messaging service opened the call",
                detail: diagnostic,
                subject: callID,
                stage: .opened
            )
            if let diagnostic { record(diagnostic: diagnostic) }
            callKit.reportIncomingCall(callID: callID, callerName: callerName, video: video)
            await callReported(callID)
        case .ignored(let why):
            record(diagnostic: why)
        case .duplicate(let pushID):
            dropped(by: "fcm-service", "push \(pushID) was already shown; the repeat is dropped")
        }
    }
}
