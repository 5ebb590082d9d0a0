import Foundation
import HeraldMacros
public import HeraldPush

/// A push's payload as a store's columns keep it, the same for every engine: the network, each
/// network's fields in a column of their own (nil for the other networks), and the body apart
/// (APNs' JSON, FCM's and Push Kit's data as a JSON object of strings with sorted keys, or the
/// plaintext a Web Push sender encrypts). A subscription's keys are not kept with the push: the
/// claim reads the device's current ones.
@MemberwiseInit
public struct StoredPayload: Sendable, Hashable {
    public var network: PushNetwork
    /// APNs' topic, the Android package, or (Web Push) the app's id.
    public var topic: String
    public var pushType: String?
    public var apnsPriority: Int?
    public var apnsID: String?
    /// FCM's priority, Push Kit's urgency, or Web Push's `Urgency` (the column is the
    /// network's own "how soon" field).
    public var fcmPriority: String?
    public var body: String

    /// The columns of `payload`.
    public init(_ payload: Push.Payload) {
        network = payload.network
        switch payload {
        case .apns(let apns):
            topic = apns.topic
            pushType = apns.type.rawValue
            apnsPriority = apns.priority.rawValue
            apnsID = apns.apnsID
            body = apns.json
        case .fcm(let fcm):
            topic = fcm.package
            fcmPriority = fcm.priority.rawValue
            body = DataFields.json(fcm.data)
        case .webPush(let webPush):
            topic = webPush.app
            fcmPriority = webPush.urgency.rawValue
            body = webPush.json
        case .hms(let hms):
            topic = hms.package
            fcmPriority = hms.urgency.rawValue
            body = DataFields.json(hms.data)
        }
    }

    /// A data message's keys and values from `body`; nil when it is not a JSON object of strings.
    private var data: [String: String]? { DataFields.fields(body) }

    /// The payload these columns hold; `corrupt` (naming `pushID`) when they do not make one.
    public func payload(pushID: String) throws(StoreError) -> Push.Payload {
        switch network {
        case .apns:
            guard let type = pushType.flatMap(APNsPushType.init(rawValue:)),
                let priority = apnsPriority.flatMap(APNsPriority.init(rawValue:)), let apnsID
            else {
                throw StoreError.corrupt.with(detail: "APNs push \(pushID) has no valid push type, priority or apns-id")
            }
            return .apns(APNsPayload(topic: topic, type: type, priority: priority, apnsID: apnsID, json: body))
        case .fcm:
            guard let priority = fcmPriority.flatMap(FCMPriority.init(rawValue:)), let data else {
                throw StoreError.corrupt.with(detail: "FCM push \(pushID) has no valid priority or data")
            }
            return .fcm(FCMPayload(package: topic, priority: priority, data: data))
        case .webPush:
            guard let urgency = fcmPriority.flatMap(WebPushUrgency.init(rawValue:)) else {
                throw StoreError.corrupt.with(detail: "Web Push push \(pushID) has no valid urgency")
            }
            return .webPush(WebPushPayload(app: topic, urgency: urgency, json: body))
        case .hms:
            guard let urgency = fcmPriority.flatMap(HMSUrgency.init(rawValue:)), let data else {
                throw StoreError.corrupt.with(detail: "Push Kit push \(pushID) has no valid urgency or data")
            }
            return .hms(HMSPayload(package: topic, urgency: urgency, data: data))
        }
    }
}
