/// Whether the user lets the app show notifications on a device (iOS's authorization status,
/// Android 13's `POST_NOTIFICATIONS`), as the device last reported it.
///
/// A device with `denied` cannot show a message push: the relay tells the backend instead of
/// sending one nobody will see. VoIP pushes do not need the permission (PushKit, FCM data).
public enum NotificationPermission: String, Sendable, Codable, Hashable, CaseIterable {
    /// The user allowed notifications (also the assumption until a device says otherwise).
    case granted
    /// The user refused or later turned notifications off.
    case denied
}
