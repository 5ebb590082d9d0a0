public import HeraldCrypto
import HeraldRelayAPI

/// The missed-call alert: a normal-priority messaging push whose lock-screen text is generic
/// ("Missed call"); the caller travels only in `herald.sealed`, sealed as `PushKind.missedCall`,
/// which the Notification Service Extension (the app's messaging service on Android) opens.
extension PushPayload {
    /// What the lock screen shows before (or without) the extension.
    public static let missedCallTitle = "Missed call"
    public static let missedCallBody = "You missed a call"

    /// The APNs body of a missed-call alert for one device.
    public static func missedCall(
        _ content: CallContent,
        for target: PushTarget,
        sealer: EnvelopeSealer
    ) throws(HeraldCryptoError) -> String {
        try sealedWhole(.missedCall(content), content.encodedLength, in: .apnsAlert, for: target.deviceID, sealer) {
            missedCallBody(callID: content.callID, pushID: target.pushID, sealed: $0)
        }
    }

    /// The FCM data of a missed-call alert for one device.
    public static func fcmMissedCall(
        _ content: CallContent,
        for target: PushTarget,
        sealer: EnvelopeSealer,
        carrier: DataCarrier = .fcm
    ) throws(HeraldCryptoError) -> [String: String] {
        var fields = fcmHeader(pushID: target.pushID, kind: "missed_call")
        fields["call_id"] = content.callID
        return try sealedWhole(
            .missedCall(content),
            content.encodedLength,
            into: fields,
            for: target.deviceID,
            sealer,
            carrier: carrier
        )
    }

    static func missedCallBody(callID: String, pushID: String, sealed: String) -> String {
        var json = "{\"aps\":{\"alert\":{\"title\":"
        json += JSONText.quoted(missedCallTitle)
        json += ",\"body\":"
        json += JSONText.quoted(missedCallBody)
        json += "},\"mutable-content\":1,\"sound\":\"default\",\"thread-id\":"
        json += JSONText.quoted("call:" + callID)
        json += "}," + heraldHeader(pushID: pushID) + "\"kind\":\"missed_call\",\"call_id\":"
        json += JSONText.quoted(callID)
        json += ",\"sealed\":"
        json += JSONText.quoted(sealed)
        json += "}}"
        return json
    }
}
