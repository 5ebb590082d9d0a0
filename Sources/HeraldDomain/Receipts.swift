import HeraldMacros

// What a phone reports about a push it was sent (docs/receipts.md): the stages and the reasons a
// push could not be shown. The receipt's bytes and tag are HeraldCrypto's `DeliveryReceipt`.

/// How far a push got on the phone, in the order a push gets there.
public enum ReceiptStage: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    /// The extension (or messaging service) ran with the push.
    case delivered
    /// The envelope opened with the device's keys.
    case opened
    /// The notification was shown.
    case shown
    /// The phone could not show it (`ReceiptFailure` says why).
    case failed
    /// The user tapped the notification (reported by the app).
    case tapped

    /// The byte that stands for the stage in `signedBytes`.
    public var code: UInt8 {
        switch self {
        case .delivered: 1
        case .opened: 2
        case .shown: 3
        case .failed: 4
        case .tapped: 5
        }
    }

    /// The stage whose `code` is `code`, or nil.
    public init?(code: Int64) {
        guard let stage = Self.allCases.first(where: { Int64($0.code) == code }) else { return nil }
        self = stage
    }

    /// Furthest wins: a tap is further than a show, a failure further than a delivery (the
    /// phone tried and gave up).
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.code < rhs.code }
}

/// Why a phone could not show a push.
public enum ReceiptFailure: String, Sendable, Hashable, Codable, CaseIterable {
    /// The envelope did not authenticate (changed on the way, or sealed for another device).
    case tampered
    /// The envelope names a key id the device does not hold.
    case unknownKey = "unknown_key"
    /// The extension ran out of its time budget before it could open the envelope.
    case budgetExceeded = "budget_exceeded"
    /// The push was not an envelope the device understands (another version, bad text).
    case malformed
}

/// One receipt the relay recorded for a push: what the phone said (its stage, its clock, the
/// failure) and when the relay received it. The store keeps it and the API shows it as is.
@MemberwiseInit
public struct PushReceipt: Sendable, Hashable, Codable {
    public var pushID: String
    public var stage: ReceiptStage
    /// The phone's clock when it happened (milliseconds since the epoch): its word, not checked.
    public var deviceTime: Int64
    /// When the relay received it.
    public var receivedAt: Int64
    /// Why the phone could not show the push (stage `failed` only).
    public var failure: ReceiptFailure?

    public enum CodingKeys: String, CodingKey, CaseIterable {
        case pushID = "push_id"
        case stage
        case deviceTime = "device_time"
        case receivedAt = "received_at"
        case failure
    }
}
