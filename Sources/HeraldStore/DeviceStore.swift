import HeraldMacros

/// Activated devices: their tokens, the relay's half of their key agreement, and their presence.
///
/// A token belongs to one device at a time: whatever gives a device a token takes it from any
/// other device that had it. Devices and presence are written through `ChangeStore.apply`.
public protocol DeviceStore: Sendable {
    /// The device with this id, as last saved or changed, or `nil`.
    func device(id: String) async throws -> DeviceRecord?
    /// The user's devices, oldest first, each with its presence if it has one, in one read: what
    /// every ingest needs.
    func recipients(userID: String) async throws -> [Recipient]
    /// The user's recipients for an ingest: as `recipients(userID:)` reads them, or kept from an
    /// earlier read with the version they had, which the ingest carries so that `accept` answers
    /// `stale` if they changed since (`Ingest.recipientsVersion`). Then a fresh
    /// `recipients(userID:)` is what to make the ingest again with.
    func recipientsForIngest(userID: String) async throws -> RecipientsSnapshot
    /// How many devices are stored.
    func deviceCount() async throws -> Int
}

/// What a notification permission report did (`ChangeStore.setNotificationPermission`).
@MemberwiseInit
public struct NotificationPermissionChange: Sendable, Hashable {
    /// The device as stored after the report.
    public var device: DeviceRecord
    /// Whether the report changed the permission (and its events were written).
    public var changed: Bool
}

extension DeviceStore {
    /// Read fresh each time, with nothing for `accept` to check.
    public func recipientsForIngest(userID: String) async throws -> RecipientsSnapshot {
        RecipientsSnapshot(recipients: try await recipients(userID: userID), version: nil)
    }
}
