extension ClaimedPush {
    /// Why a push just claimed cannot be sent, if it cannot, checked in this order: it expired,
    /// its device is gone (`device` nil), its user turned notifications off after it was queued
    /// (for a push that needs them), or the device has no token for it. Each engine's claim
    /// finishes such a push at once with this state and reason, its attempt given back.
    ///
    /// - Parameters:
    ///   - device: The device's notification permission and why its token died, as stored.
    ///   - token: The device's token for the push's kind.
    public static func unsendable(
        expiresAt: Int64,
        now: Int64,
        device: (notifications: String?, deadReason: String?)?,
        needsNotificationPermission: Bool,
        token: String?
    ) -> (state: PushState, reason: String)? {
        if expiresAt <= now { return (.expired, "expired before sending") }
        guard let device else { return (.skipped, "device_deactivated") }
        if device.notifications == NotificationPermission.denied.rawValue, needsNotificationPermission {
            // Its user turned notifications off after it was queued: it could not be shown.
            return (.skipped, "notifications_denied")
        }
        guard token != nil else { return (.skipped, device.deadReason.map { "token_dead: \($0)" } ?? "no_token") }
        return nil
    }
}
