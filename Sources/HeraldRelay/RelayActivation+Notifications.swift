public import HeraldRelayAPI
public import HeraldStore

/// A device's notification permission (docs/relay.md, "Notification permission"): the app
/// reports whether its user lets it show notifications; a device with `denied` gets no alert
/// (messages, missed calls, callbacks) while calls still ring it (PushKit and FCM data messages
/// need no permission).
extension RelayActivation {
    /// Records the permission a device reports; a change writes its webhook event
    /// (`device.notifications_denied` / `device.notifications_granted`) in the same transaction.
    public func setNotificationPermission(
        device: DeviceRecord,
        _ request: NotificationPermissionRequest
    ) async throws(RelayError) -> NotificationPermissionView {
        let app = try await context.app(id: device.appID)
        let planned = planner.permissionReport(device: device, request, app: app, now: context.clock.now())
        let outcomes = try await context.commit(planned.change)
        return outcomes == [.applied] ? planned.answer.changed : planned.answer.unchanged
    }
}

/// The data of a `device.notifications_*` event: ids, the state and when it changed only.
struct NotificationEventData: Encodable {
    var deviceID: String
    var userID: String
    var state: String
    var at: Int64

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case userID = "user_id"
        case state
        case at = "changed_at"
    }
}

extension RelayContext {
    /// The reason a device that may not show notifications gets no alert.
    static let notificationsDenied = "notifications_denied"

    /// `entry` as it is written for `device`: a push that shows a notification
    /// (`OutboxKind.needsNotificationPermission`, the rule the claim applies too) to a device whose
    /// user turned notifications off is written finished instead of queued, `skipped` with
    /// `notifications_denied`, so the push listing says why it never came.
    func permitted(_ entry: OutboxEntry, for device: DeviceRecord) -> OutboxEntry {
        guard entry.kind.needsNotificationPermission, device.notificationPermission == .denied else { return entry }
        var entry = entry
        entry.state = .skipped
        entry.lastReason = Self.notificationsDenied
        return entry
    }
}
