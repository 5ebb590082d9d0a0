public import HeraldDomain
import HeraldMacros

/// `POST /v1/devices/{id}/receipts`: what the phone says happened to a push it was sent, with
/// the tag its session keys made (docs/receipts.md).
@MemberwiseInit
public struct ReceiptRequest: Sendable, Codable, Hashable {
    public var pushID: String
    public var stage: ReceiptStage
    /// The phone's clock when it happened, milliseconds since the epoch.
    public var deviceTime: Int64
    /// Why the phone could not show it: required for `failed`, refused otherwise.
    public var failure: ReceiptFailure?
    /// The key id (16 hex characters) of the agreement whose keys made the tag.
    public var keyID: String
    /// The receipt's tag, base64url without padding (32 bytes).
    public var tag: String

    enum CodingKeys: String, CodingKey, CaseIterable {
        case pushID = "push_id"
        case stage
        case deviceTime = "device_time"
        case failure
        case keyID = "key_id"
        case tag
    }
}
