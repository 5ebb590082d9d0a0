public import HeraldDomain
import HeraldMacros

/// `PUT /v1/devices/{id}/notifications`: the device reports whether the user lets it show
/// notifications (at launch, and whenever the setting changes).
@MemberwiseInit
public struct NotificationPermissionRequest: Sendable, Codable, Hashable {
    public var permission: NotificationPermission

    enum CodingKeys: String, CodingKey, CaseIterable {
        case permission
    }
}

/// The answer to `PUT /v1/devices/{id}/notifications`.
@MemberwiseInit
public struct NotificationPermissionView: Sendable, Codable, Hashable {
    public var deviceID: String
    public var permission: NotificationPermission
    /// Milliseconds since the epoch, when the relay recorded it.
    public var updatedAt: Int64

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case permission
        case updatedAt = "updated_at"
    }
}
