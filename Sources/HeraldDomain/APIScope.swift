/// What an API key may do. A route names the one scope it needs.
public enum APIScope: String, Sendable, Hashable, CaseIterable, Codable, Comparable {
    /// Messages, calls, broadcasts, chat events, callbacks, cancelling a call.
    case send
    /// Push status and listings, devices, calls, callbacks, webhook events, apps, the audit log.
    case read
    /// Activating, re-tokening and deactivating devices for a user.
    case devices
    /// Registering and changing apps.
    case apps

    public static func < (lhs: APIScope, rhs: APIScope) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
