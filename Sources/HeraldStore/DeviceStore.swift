/// Activated devices: their tokens, the relay's half of their key agreement, and their presence.
///
/// A token belongs to one device at a time: whatever gives a device a token takes it from any
/// other device that had it.
public protocol DeviceStore: Sendable {
    /// Adds or replaces a device (by id). Its tokens are taken away from any other device that had
    /// them.
    func saveDevice(_ device: DeviceRecord) async throws
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
    /// Sets a device's tokens (`nil` leaves one as it is; an empty string removes it), taking them
    /// away from any other device; a token set clears the device's `tokenDeadReason`. Returns the
    /// device after the change, or `nil` if unknown.
    func updateTokens(deviceID: String, messaging: String?, voip: String?, now: Int64) async throws -> DeviceRecord?
    /// Removes a device with its tokens, keys, credential, presence and chat disconnects. Returns
    /// whether it existed.
    func deleteDevice(id: String) async throws -> Bool
    /// How many devices are stored.
    func deviceCount() async throws -> Int
    /// Adds or replaces a device's presence (its last heartbeat).
    func savePresence(_ presence: PresenceRecord) async throws
    /// Records the notification permission a device reports. When it differs from the stored
    /// one, it is set with `notificationPermissionAt = now` and `events` are written in the same
    /// transaction; the same permission again changes nothing and writes no event (of two reports
    /// racing, one changes it). Returns the device after it and whether it changed, or `nil` if
    /// the device is unknown.
    func setNotificationPermission(
        deviceID: String,
        _ permission: NotificationPermission,
        now: Int64,
        events: [WebhookEvent]
    ) async throws -> NotificationPermissionChange?
}

/// What `DeviceStore.setNotificationPermission` did.
public struct NotificationPermissionChange: Sendable, Hashable {
    /// The device as stored after the report.
    public var device: DeviceRecord
    /// Whether the report changed the permission (and its events were written).
    public var changed: Bool

    public init(device: DeviceRecord, changed: Bool) {
        self.device = device
        self.changed = changed
    }
}

extension DeviceStore {
    /// Read fresh each time, with nothing for `accept` to check.
    public func recipientsForIngest(userID: String) async throws -> RecipientsSnapshot {
        RecipientsSnapshot(recipients: try await recipients(userID: userID), version: nil)
    }
}
