import Foundation
public import HeraldCrypto

/// What the phone made of one callback push (seed 002): the dialog to show, or why not.
public struct CallbackPushResult: Sendable, Hashable {
    /// The notification with the dialog's title and text; the generic text when it did not open.
    public var notification: DisplayedNotification?
    /// The opened content: callback id, push number, service id and the dialog's actions.
    public var callback: CallbackContent?
    /// Why the dialog is not shown, when it is not.
    public var diagnostic: String?
    /// The push was shown before: nothing is shown again.
    public var duplicate: Bool = false
}

extension AppGroupStore {
    /// Opens a callback push's envelope as push number `sequence` of `callbackID` (both from the
    /// clear fields, both bound into the additional data).
    public func openCallback(
        sealed: String,
        callbackID: String,
        sequence: UInt16
    ) throws(DeviceError)
        -> CallbackContent
    {
        let opened = try openSealed(sealed) { deviceID in
            EnvelopeContext(kind: .callback, pushID: callbackID, deviceID: deviceID, sequence: sequence)
        }
        guard case .callback(let content) = opened else { throw .payload("the sealed content is not a callback") }
        return content
    }

    /// The name a callback push is remembered by: a later push of the same callback (after a
    /// snooze) is a new push, not a repeat.
    static func callbackPushName(_ callbackID: String, _ sequence: UInt16) -> String {
        shownPushID(kind: .callback, subjectID: "\(callbackID)#\(sequence)")
    }
}

extension NotificationServiceEmulator {
    /// Handles a callback push (an APNs alert with the `HERALD_CALLBACK` category): opens the
    /// sealed dialog and shows its title and text; the app shows the actions' labels on the
    /// category's buttons. A push that does not open keeps the generic text and offers nothing.
    public func receiveCallback(payload: String, pushType: String) -> CallbackPushResult {
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any] else {
            return CallbackPushResult(diagnostic: "the payload is not a JSON object")
        }
        let aps = object["aps"] as? [String: Any] ?? [:]
        let herald = object["herald"] as? [String: Any] ?? [:]
        // The clear ids are not trusted for a callback; the push's id is only what its receipt names.
        guard let shown = Self.generic(aps: aps, herald: nil, pushID: herald["push_id"] as? String, at: clock.now())
        else {
            return CallbackPushResult(diagnostic: "the callback push has no alert")
        }
        guard pushType == "alert", (aps["mutable-content"] as? Int) == 1 else {
            return CallbackPushResult(notification: shown, diagnostic: "the extension did not run for this push")
        }
        guard aps["category"] as? String == "HERALD_CALLBACK" else {
            return CallbackPushResult(notification: shown, diagnostic: "tampered: aps.category is not HERALD_CALLBACK")
        }
        guard let callbackID = herald["callback_id"] as? String, let number = herald["push"] as? Int,
            let sequence = UInt16(exactly: number), let sealed = herald["sealed"] as? String
        else {
            return CallbackPushResult(
                notification: shown,
                diagnostic: "the callback push lacks its id, number or envelope"
            )
        }
        return store.showCallback(
            sealed: sealed,
            callbackID: callbackID,
            sequence: sequence,
            over: shown,
            capacity: rememberedPushes
        )
    }
}

extension FirebaseMessagingServiceEmulator {
    /// Handles a callback data message: opens the sealed dialog and builds the notification with
    /// its actions. One that does not open shows the app's generic text and offers nothing (a
    /// high-priority message must show something).
    public func onCallbackReceived(_ data: [String: String]) -> CallbackPushResult {
        let shown = generic(data)
        guard let callbackID = data["callback_id"], let sequence = data["push"].flatMap({ UInt16($0) }),
            let sealed = data["sealed"]
        else {
            return CallbackPushResult(notification: shown, diagnostic: "the callback lacks its id, number or envelope")
        }
        return store.showCallback(
            sealed: sealed,
            callbackID: callbackID,
            sequence: sequence,
            over: shown,
            capacity: rememberedPushes
        )
    }
}

extension AppGroupStore {
    /// What the NSE and the Android messaging service do alike with a callback push: open the
    /// sealed dialog, drop a repeat of a push already shown, and show the dialog's title and text
    /// over `shown` (the app's generic text, kept when the push does not open).
    func showCallback(
        sealed: String,
        callbackID: String,
        sequence: UInt16,
        over shown: DisplayedNotification,
        capacity: Int
    ) -> CallbackPushResult {
        let content: CallbackContent
        do {
            content = try openCallback(sealed: sealed, callbackID: callbackID, sequence: sequence)
        } catch {
            return CallbackPushResult(notification: shown, diagnostic: error.detail)
        }
        let name = Self.callbackPushName(callbackID, sequence)
        if (try? recordShown(name, capacity: capacity)) == false {
            return CallbackPushResult(
                diagnostic: "push \(name) was already shown; the repeat is dropped",
                duplicate: true
            )
        }
        var shown = shown
        shown.title = content.dialog.title
        shown.body = content.dialog.text
        return CallbackPushResult(notification: shown, callback: content)
    }
}
