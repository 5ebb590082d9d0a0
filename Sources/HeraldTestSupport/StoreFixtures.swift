public import HeraldPush
public import HeraldStore

/// Records for store and dispatcher tests: one app, devices with tokens, pushes of each kind.
public enum StoreFixtures {
    /// The app every fixture device belongs to.
    public static let appID = "com.example.chat"

    /// The fixture app.
    public static func app() -> AppRecord {
        AppRecord(id: appID, teamID: "TEAM123456")
    }

    /// An iOS device of `user`. Its tokens default to `aa<id>` (messaging) and `bb<id>` (VoIP);
    /// set the record's fields for a device without them.
    public static func device(
        _ id: String,
        user: String = "u",
        token: String? = nil,
        voip: String? = nil,
        createdAt: Int64 = 0
    ) -> DeviceRecord {
        DeviceRecord(
            id: id,
            userID: user,
            appID: appID,
            platform: .ios,
            messagingToken: token ?? "aa" + id,
            voipToken: voip ?? "bb" + id,
            keyID: "0011223344556677",
            previousKeyID: nil,
            devicePublicKey: [1],
            relayPublicKey: [2],
            sealedRelaySecretKey: [3],
            sealedSessionKeys: [4],
            credentialHash: [5],
            createdAt: createdAt,
            updatedAt: createdAt
        )
    }

    /// An Android device of `user` with FCM token `token`.
    public static func androidDevice(_ id: String, user: String = "u", token: String) -> DeviceRecord {
        var device = device(id, user: user, token: token)
        device.platform = .android
        device.voipToken = nil
        return device
    }

    /// A queued APNs push accepted at `time`, due then, expiring at `expires`: an alert for a
    /// message, a VoIP push for a call.
    public static func push(
        _ id: String,
        device: String,
        kind: OutboxKind = .message,
        at time: Int64,
        expires: Int64 = 1_000_000
    ) -> OutboxEntry {
        OutboxEntry(
            pushID: id,
            deviceID: device,
            kind: kind,
            subjectID: "s-" + id,
            priority: kind == .call ? 10 : 5,
            payload: payload(id: id, kind: kind),
            nextAttemptAt: time,
            expiresAt: expires,
            createdAt: time,
            updatedAt: time
        )
    }

    /// A queued FCM push accepted at `time`, with data that needs escaping in JSON.
    public static func fcmPush(
        _ id: String,
        device: String,
        kind: OutboxKind = .message,
        at time: Int64,
        expires: Int64 = 1_000_000
    ) -> OutboxEntry {
        var entry = push(id, device: device, kind: kind, at: time, expires: expires)
        entry.payload = .fcm(
            FCMPayload(
                package: appID,
                priority: kind == .call ? .high : .normal,
                data: ["kind": kind.rawValue, "sealed": "AT\"x\\y/é", "id": id]
            )
        )
        return entry
    }

    /// The APNs payload of `push(_:device:kind:at:expires:)`.
    public static func payload(id: String, kind: OutboxKind) -> Push.Payload {
        .apns(
            APNsPayload(
                topic: kind == .call ? appID + ".voip" : appID,
                type: kind == .call ? .voip : .alert,
                priority: kind == .call ? .immediate : .conserve,
                apnsID: id,
                json: kind == .call ? #"{"herald":{"call":"\#(id)"}}"# : #"{"aps":{"alert":"\#(id)"}}"#
            )
        )
    }

    /// A message of `user`, kept until `expires`.
    public static func message(_ id: String, user: String = "u", at time: Int64 = 0, expires: Int64) -> MessageRecord {
        MessageRecord(
            id: id,
            userID: user,
            conversation: "c",
            sealedSender: [4, 5, 6],
            sealedText: [1, 2, 3],
            createdAt: time,
            expiresAt: expires
        )
    }

    /// An ingest of `pushes` (and `message`), without an idempotency key unless given.
    public static func ingest(
        _ pushes: [OutboxEntry],
        key: String? = nil,
        message: MessageRecord? = nil,
        receipt: [UInt8] = []
    ) -> Ingest {
        Ingest(idempotencyKey: key, message: message, pushes: pushes, receipt: receipt)
    }
}
