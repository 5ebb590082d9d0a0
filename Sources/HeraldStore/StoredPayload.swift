import Foundation
import HeraldMacros
public import HeraldPush

/// A push's payload as a store's columns keep it, the same for every engine: the network, each
/// network's fields in a column of their own (nil for the other network), and the body apart
/// (APNs' JSON, or FCM's data as a JSON object of strings with sorted keys).
@MemberwiseInit
public struct StoredPayload: Sendable, Hashable {
    public var network: PushNetwork
    /// APNs' topic, or the Android package.
    public var topic: String
    public var pushType: String?
    public var apnsPriority: Int?
    public var apnsID: String?
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
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            // Encoding a dictionary of strings cannot fail.
            body = (try? encoder.encode(fcm.data)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        }
    }

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
            guard let priority = fcmPriority.flatMap(FCMPriority.init(rawValue:)),
                let data = try? JSONDecoder().decode([String: String].self, from: Data(body.utf8))
            else { throw StoreError.corrupt.with(detail: "FCM push \(pushID) has no valid priority or data") }
            return .fcm(FCMPayload(package: topic, priority: priority, data: data))
        }
    }
}
