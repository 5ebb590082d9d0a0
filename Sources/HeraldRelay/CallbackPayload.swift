public import HeraldCrypto
import HeraldRelayAPI
public import HeraldStore

/// Builds a callback's pushes: an APNs alert with the callback category, or an FCM data message,
/// each with the dialog sealed inside the budget.
///
/// The lock screen shows the app's generic text; the service id, the dialog's title, text and
/// labels travel only in the envelope, which the Notification Service Extension (iOS) or the
/// messaging service (Android) opens to show the dialog with the app's registered actions.
public enum CallbackPayload {
    /// The notification category the app registers with the actions' buttons (iOS
    /// `UNNotificationCategory`): the NSE fills the buttons' titles from the sealed dialog.
    public static let category = "HERALD_CALLBACK"

    /// The body of the APNs alert for one device.
    public static func apns(
        _ content: CallbackContent,
        app: AppRecord,
        for target: PushTarget,
        sealer: EnvelopeSealer
    ) throws(HeraldCryptoError) -> String {
        try check(content, app: app)
        let envelope = try sealer.seal(.callback(content), deviceID: target.deviceID)
        return apnsBody(
            app: app,
            callbackID: content.callbackID,
            sequence: content.sequence,
            pushID: target.pushID,
            sealed: envelope.text
        )
    }

    /// The data of the data message (FCM, Push Kit, Web Push) for one device (string keys and
    /// values).
    public static func fcm(
        _ content: CallbackContent,
        app: AppRecord,
        for target: PushTarget,
        sealer: EnvelopeSealer
    ) throws(HeraldCryptoError) -> [String: String] {
        try check(content, app: app)
        var fields = fcmFields(callbackID: content.callbackID, sequence: content.sequence, pushID: target.pushID)
        fields["sealed"] = try sealer.seal(.callback(content), deviceID: target.deviceID).text
        return fields
    }

    /// Throws `doesNotFit` unless the content's envelope fits in every network's budget with the
    /// longest push number and a push id, so a callback accepted is never refused at its fifth push.
    public static func check(_ content: CallbackContent, app: AppRecord) throws(HeraldCryptoError) {
        let apnsRoom = PayloadBudget.apnsAlert.plaintextCapacity(
            surroundingBytes: apnsBody(
                app: app,
                callbackID: content.callbackID,
                sequence: .max,
                pushID: longestPushID,
                sealed: ""
            )
            .utf8.count
        )
        let fields = fcmFields(callbackID: content.callbackID, sequence: .max, pushID: longestPushID)
        let dataRoom = DataCarrier.allCases.map { $0.plaintextCapacity(around: fields) }.min() ?? 0
        guard content.encodedLength <= min(apnsRoom, dataRoom) else { throw .doesNotFit }
    }

    static func apnsBody(
        app: AppRecord,
        callbackID: String,
        sequence: UInt16,
        pushID: String,
        sealed: String
    ) -> String {
        var json = "{\"aps\":{\"alert\":{\"title\":"
        json += JSONText.quoted(app.alertTitle)
        json += ",\"body\":"
        json += JSONText.quoted(app.alertBody)
        json += "},\"category\":\"\(category)\",\"interruption-level\":\"time-sensitive\",\"mutable-content\":1,"
        json += "\"sound\":\"default\"}," + PushPayload.heraldHeader(pushID: pushID)
        json += "\"kind\":\"callback\",\"callback_id\":"
        json += JSONText.quoted(callbackID)
        json += ",\"push\":\(sequence),\"sealed\":"
        json += JSONText.quoted(sealed)
        json += "}}"
        return json
    }

    static func fcmFields(callbackID: String, sequence: UInt16, pushID: String) -> [String: String] {
        PushPayload.fcmHeader(pushID: pushID, kind: "callback").merging([
            "callback_id": callbackID, "push": String(sequence),
        ]) { _, new in new }
    }

    /// A push id as long as any the relay makes (`TimeOrderedID`): what the budget check leaves
    /// room for.
    static let longestPushID = TimeOrderedID.make(milliseconds: 0)
}
