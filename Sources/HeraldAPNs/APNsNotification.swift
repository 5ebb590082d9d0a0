import Foundation
public import HeraldAPNsCore
import HeraldMacros
public import NIOCore

/// One push to one device token, as APNs receives it.
///
/// Validated before it is sent (`validate()`), so requests APNs would refuse for their shape
/// never leave the process.
@MemberwiseInit
public struct APNsNotification: Sendable {
    /// The device token, 64 hex characters.
    public var deviceToken: String
    /// `apns-topic`: the bundle id, or `<bundle>.voip` for VoIP pushes.
    public var topic: String
    public var pushType: APNsPushType
    public var priority: APNsPriority
    /// `apns-expiration`, seconds since the epoch; 0 means "deliver once or drop"; nil lets APNs
    /// store it by its own policy. Retries never go past it.
    public var expiration: Int64?
    /// `apns-collapse-id`, at most 64 bytes.
    public var collapseID: String?
    /// `apns-id`: chosen once and kept across retries, so APNs and logs see one push.
    public var apnsID: String = APNsUUID.random()
    /// The JSON body.
    public var payload: ByteBuffer

    /// A messaging push: `alert`, priority 5 (the NSE decrypts it; it need not wake the phone
    /// at once), topic = bundle id.
    public static func alert(
        to deviceToken: String,
        bundleID: String,
        payload: ByteBuffer,
        expiration: Int64? = nil,
        collapseID: String? = nil,
        apnsID: String = APNsUUID.random()
    ) -> APNsNotification {
        APNsNotification(
            deviceToken: deviceToken,
            topic: bundleID,
            pushType: .alert,
            priority: .conserve,
            expiration: expiration,
            collapseID: collapseID,
            apnsID: apnsID,
            payload: payload
        )
    }

    /// A call push: `voip`, priority 10, topic `<bundle>.voip`.
    public static func voip(
        to deviceToken: String,
        bundleID: String,
        payload: ByteBuffer,
        expiration: Int64?,
        apnsID: String = APNsUUID.random()
    ) -> APNsNotification {
        APNsNotification(
            deviceToken: deviceToken,
            topic: bundleID + ".voip",
            pushType: .voip,
            priority: .immediate,
            expiration: expiration,
            apnsID: apnsID,
            payload: payload
        )
    }

    /// Whether the expiration will have passed `delay` after `now` (milliseconds since the
    /// epoch). `0` ("now or never") is never expired before the first attempt.
    func isExpired(after delay: Duration, now: Int64) -> Bool {
        guard let expiration, expiration > 0 else { return false }
        return now + delay.milliseconds >= expiration * 1000
    }

    /// Checks what APNs would refuse for the request's shape.
    public func validate() throws(APNsClientError) {
        guard APNsDeviceToken.isWellFormed(deviceToken) else {
            throw .invalidNotification("the device token must be 64 hex characters")
        }
        guard !topic.isEmpty else { throw .invalidNotification("the topic is empty") }
        if let suffix = pushType.topicSuffix, !topic.hasSuffix(suffix) {
            throw .invalidNotification("a \(pushType.rawValue) push needs a topic ending in \(suffix)")
        }
        guard pushType.allows(priority) else {
            throw .invalidNotification("priority \(priority.rawValue) is not allowed for \(pushType.rawValue) pushes")
        }
        guard payload.readableBytes > 0 else { throw .invalidNotification("the payload is empty") }
        guard payload.readableBytes <= pushType.payloadLimit else {
            throw .invalidNotification(
                "the payload is \(payload.readableBytes) bytes; \(pushType.rawValue) pushes allow \(pushType.payloadLimit)"
            )
        }
        if let collapseID, collapseID.utf8.count > 64 {
            throw .invalidNotification("the collapse id is longer than 64 bytes")
        }
        if let expiration, expiration < 0 { throw .invalidNotification("the expiration is negative") }
        guard APNsUUID.isCanonical(apnsID[...]) else { throw .invalidNotification("apns-id must be a canonical UUID") }
    }
}
