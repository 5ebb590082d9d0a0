import HeraldMacros

/// A user's recipients as an ingest uses them, perhaps from a cache, with the version that
/// `accept` checks them against (`Ingest.recipientsVersion`).
@MemberwiseInit
public struct RecipientsSnapshot: Sendable, Hashable {
    public var recipients: [Recipient]
    /// `nil` where the engine reads its recipients fresh each time and checks nothing.
    public var version: RecipientsVersion?

    /// Only `app`'s devices (all of them when `nil`), at the same version: the version is the
    /// user's, whichever of its devices an ingest is made for.
    public func only(app: String?) -> RecipientsSnapshot {
        guard let app else { return self }
        return RecipientsSnapshot(recipients: recipients.filter { $0.device.appID == app }, version: version)
    }
}

/// Which state of a user's devices, presence and live channels an ingest was made for: a number
/// every change to them raises.
@MemberwiseInit
public struct RecipientsVersion: Sendable, Hashable {
    public var userID: String
    public var version: Int64
}
