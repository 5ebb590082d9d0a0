import Foundation
import HeraldCrypto
import HeraldDomain
import HeraldPush
import HeraldRelayAPI

/// How Herald's data fields reached the app: an FCM data message to the Android app's messaging
/// service, or a decrypted Web Push message to the browser's service worker. Both carry the same
/// strings (`PushPayload`), opened the same way.
struct DataDelivery {
    /// Web Push to a service worker, else FCM to the Android app's messaging service.
    let webPush: Bool
    /// The push type and priority as the timeline shows them.
    let pushType: String
    let priority: TimelinePriority
    /// The size the network counts: FCM's data, Web Push's ciphertext.
    let bytes: Int
    /// What else the network says (a collapse key; a TTL and topic).
    let detail: String?

    /// The network's actor on the timeline.
    var network: String { webPush ? "push-service" : "fcm" }
    /// Who opens the data, and its name in a step.
    var handler: String { webPush ? "service-worker" : "fcm-service" }
    var handlerName: String { webPush ? "service worker" : "messaging service" }
    /// Who hands the data to the handler: the browser runs the worker itself.
    var opener: String { webPush ? "service-worker" : "app" }
    /// Where a notification it shows goes.
    var display: String { webPush ? "notification" : "notification-center" }
    var step: String { webPush ? "push delivered" : "data message delivered" }

    /// An FCM data message, its size counted as FCM counts the data's keys and values.
    static func fcm(_ message: DeliveredFCMMessage) -> DataDelivery {
        DataDelivery(
            webPush: false,
            pushType: "fcm",
            priority: .fcm(message.priority),
            bytes: message.data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count },
            detail: message.collapseKey.map { "collapse key \($0)" }
        )
    }
}

extension EmulatedPhone {
    /// An FCM data message as the app's messaging service gets it: opened, shown or dropped.
    func receive(_ message: DeliveredFCMMessage) async {
        await receive(data: message.data, via: .fcm(message))
    }

    /// Herald's data fields as `delivery`'s handler gets them: opened, shown or dropped.
    func receive(data: [String: String], via delivery: DataDelivery) async {
        let subject: String?
        if data["kind"] == "missed_call" {
            subject = data["call_id"].map { "missed-call:" + $0 }
        } else if let callback = data["callback_id"] {
            subject = Self.callbackSubject(callback, UInt16(data["push"] ?? "") ?? 0)
        } else {
            subject = data["message_id"] ?? data["call_id"]
        }
        timeline.record(
            delivery.network,
            delivery.opener,
            delivery.step,
            pushType: delivery.pushType,
            priority: delivery.priority,
            topic: configuration.bundleID,
            payloadBytes: delivery.bytes,
            detail: delivery.detail,
            subject: subject,
            stage: .delivered
        )
        if notificationsDenied, data["kind"] != "call" {
            withheld(by: delivery.handler, subject: subject)
            return
        }
        if data["kind"] == "callback" {
            await handleCallback(
                messagingService.onCallbackReceived(data),
                component: delivery.handler,
                subject: data["callback_id"]
            )
            return
        }
        await open(data, via: delivery, subject: subject)
    }

    private func open(_ data: [String: String], via delivery: DataDelivery, subject: String?) async {
        switch messagingService.onMessageReceived(data) {
        case .notification(let shown, let opened, let diagnostic, let failure):
            timeline.record(
                delivery.opener,
                delivery.handler,
                "\(delivery.handlerName) " + (opened ? "opened the sealed content" : "kept the generic content"),
                detail: diagnostic,
                subject: subject,
                stage: .opened
            )
            if let diagnostic { record(diagnostic: diagnostic) }
            show(shown, from: delivery.handler, to: delivery.display, subject: subject)
            await sendReceipts(
                pushID: data["push_id"],
                Self.receiptStages(opened: opened, shown: true, failure: failure),
                subject: subject
            )
        case .call(let callID, let callerName, let video, let diagnostic):
            timeline.record(
                delivery.opener,
                delivery.handler,
                "\(delivery.handlerName) opened the call",
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
            dropped(by: delivery.handler, "push \(pushID) was already shown; the repeat is dropped")
        }
    }
}
