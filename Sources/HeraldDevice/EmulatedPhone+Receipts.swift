import Foundation
import HeraldCrypto
import HeraldDomain
import HeraldRelayAPI

/// Which taps the app reports (docs/receipts.md): the app, not the extension, sends `tapped`,
/// once per push, naming the push the notification came with; a notification that came with no
/// push id (a capture, an older relay) gets none.
struct TapReceipts: Sendable, Hashable {
    /// The pushes already reported tapped, for as long as the app runs (a repeat after a relaunch
    /// is answered 200 by the relay and writes nothing).
    private(set) var reported: Set<String> = []

    /// The push whose `tapped` receipt a tap on `notification` sends, or nil when none is sent.
    mutating func tap(_ notification: DisplayedNotification) -> String? {
        guard let pushID = notification.pushID, reported.insert(pushID).inserted else { return nil }
        return pushID
    }
}

extension EmulatedPhone {
    /// The relay's id of a delivered APNs push (`herald.push_id`), which its receipts name.
    static func pushID(ofPayload payload: String) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any]
        return (object?["herald"] as? [String: Any])?["push_id"] as? String
    }

    /// The receipts an extension's result makes (docs/receipts.md): none unless it ran with a
    /// new push.
    static func receiptStages(_ result: ServiceExtensionResult) -> [(ReceiptStage, ReceiptFailure?)] {
        guard result.ranExtension, !result.duplicate else { return [] }
        return receiptStages(opened: result.opened, shown: result.notification != nil, failure: result.failure)
    }

    /// The receipts of a push the extension (or the messaging service) ran with: `delivered`,
    /// then `opened` and `shown` when the content opened, or `failed` with why it did not;
    /// `shown` alone for a push with nothing sealed (content policy none) that was shown.
    static func receiptStages(opened: Bool, shown: Bool, failure: ReceiptFailure?) -> [(ReceiptStage, ReceiptFailure?)]
    {
        var stages: [(ReceiptStage, ReceiptFailure?)] = [(.delivered, nil)]
        if let failure {
            stages.append((.failed, failure))
        } else if opened {
            stages.append((.opened, nil))
            if shown { stages.append((.shown, nil)) }
        } else if shown {
            stages.append((.shown, nil))
        }
        return stages
    }

    /// Sends a receipt for each stage, tagged with the current session keys; a push without the
    /// relay's push id (a capture, an older relay) gets none. A receipt the relay refuses is a
    /// diagnostic, never a reason to stop the phone.
    func sendReceipts(pushID: String?, _ stages: [(ReceiptStage, ReceiptFailure?)], subject: String?) async {
        guard let pushID, !stages.isEmpty, let registration = store.registration(),
            let credential = store.credential(), let keyID = KeyID(hex: registration.keyID),
            let keys = store.sessionKeys(for: keyID)
        else { return }
        for (stage, failure) in stages {
            let receipt = DeliveryReceipt(
                keyID: keyID,
                pushID: pushID,
                stage: stage,
                deviceTime: timeline.time,
                failure: failure
            )
            do {
                let request = ReceiptRequest(
                    pushID: pushID,
                    stage: stage,
                    deviceTime: receipt.deviceTime,
                    failure: failure,
                    keyID: keyID.hex,
                    tag: ByteEncoding.base64URL(try receipt.tag(deviceKeys: keys))
                )
                let taken = try await http.sendReceipt(
                    relay: registration.relayURL,
                    deviceID: registration.deviceID,
                    request,
                    credential: credential
                )
                recorded(taken)
                timeline.record(
                    "app",
                    "relay",
                    "receipt sent",
                    detail: failure.map { "\(stage.rawValue): \($0.rawValue)" } ?? stage.rawValue,
                    subject: subject
                )
            } catch {
                // The phone is stopping: the receipt goes with it, as on a real phone.
                if Task.isCancelled { return }
                record(diagnostic: "the relay did not take the \(stage.rawValue) receipt of push \(pushID): \(error)")
            }
        }
    }
}
