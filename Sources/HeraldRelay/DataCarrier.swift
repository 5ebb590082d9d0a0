public import HeraldCrypto
public import HeraldDomain
import HeraldPush

/// A network that carries a push as data (string keys and values) rather than APNs' JSON body:
/// how it counts the data's size, and the most it takes.
///
/// FCM counts keys and values; Push Kit takes the data as one string and Web Push as the
/// plaintext it encrypts, both Herald's JSON object of the fields, so their size is that JSON's.
public enum DataCarrier: Sendable, CaseIterable {
    case fcm
    case hms
    case webPush

    /// The most the network takes.
    public var budget: PayloadBudget {
        switch self {
        case .fcm: .fcmData
        case .hms: .hmsData
        case .webPush: .webPushPlaintext
        }
    }

    /// The fields' size as the network counts it.
    public func size(of fields: [String: String]) -> Int {
        switch self {
        case .fcm: fields.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        case .hms, .webPush: DataFields.json(fields).utf8.count
        }
    }

    /// The longest plaintext whose envelope fits under `sealed` beside `fields`. The envelope's
    /// base64url text needs no JSON escaping, so each of its characters is one byte either way.
    func plaintextCapacity(around fields: [String: String]) -> Int {
        var withEnvelope = fields
        withEnvelope["sealed"] = ""
        return budget.plaintextCapacity(surroundingBytes: size(of: withEnvelope))
    }
}

extension DevicePlatform {
    /// The data carrier of the platform's network; nil for iOS, whose pushes are APNs' JSON.
    public var dataCarrier: DataCarrier? {
        switch self {
        case .ios: nil
        case .android: .fcm
        case .huawei: .hms
        case .web: .webPush
        }
    }
}
