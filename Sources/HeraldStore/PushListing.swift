public import HeraldDomain
import HeraldMacros
public import HeraldPush

/// Which pushes `OutboxStore.pushes(matching:)` lists, newest first: every condition given must
/// hold.
@MemberwiseInit
public struct PushQuery: Sendable, Hashable {
    /// Only pushes to the devices this user has now (a deactivated device's pushes are found by
    /// `deviceID` only: the device row that names its user is gone).
    public var userID: String?
    /// Only pushes to this device.
    public var deviceID: String?
    /// Only pushes of this subject (`OutboxEntry.subjectID`): a message's id, a call's id, or a
    /// callback's push (`CallbackPushSubject.make`, `<callback id>#<push number>`).
    public var subjectID: String?
    /// Only pushes of the messages of this conversation (the backend's id), through the
    /// messages kept (`message_retention`).
    public var conversation: String? = nil
    /// Only pushes in this state.
    public var state: PushState?
    /// Only pushes accepted at or after this time (milliseconds since the epoch).
    public var since: Int64?
    /// Only pushes after this one in the listing's order: the previous page's `next`.
    public var after: PushCursor?
    /// At most this many pushes; taken within `limits` (a smaller value reads as its lower
    /// bound, a larger as its upper).
    public var limit: Int = 100

    /// The page sizes a store answers: 1 to 500.
    public static let limits: ClosedRange<Int> = 1...500
}

/// A place in the listing's order (acceptance time, newest first, then push id, greatest
/// first): the next page starts with the first push after it.
///
/// It names a push by its acceptance time and id, which never change, so pages read one after
/// another neither skip nor repeat a push however the outbox changes between them (pushes
/// accepted meanwhile come before the first page, not inside the listing).
@MemberwiseInit
public struct PushCursor: Sendable, Hashable {
    /// The push's acceptance time, milliseconds since the epoch.
    public var createdAt: Int64
    public var pushID: String
}

/// One push as an operator sees it: where it went and what became of it, never what it carried
/// (no payload, sender or text) nor the token it went to.
@MemberwiseInit
public struct PushSummary: Sendable, Hashable {
    public var pushID: String
    public var deviceID: String
    /// The device's user; `nil` once the device is deactivated.
    public var userID: String?
    /// The device's app; `nil` once the device is deactivated.
    public var appID: String?
    public var network: PushNetwork
    public var kind: OutboxKind
    /// What the push is about (`OutboxEntry.subjectID`): a message's id, a call's id, or a
    /// callback's push (`<callback id>#<push number>`).
    public var subjectID: String
    public var state: PushState
    public var attempts: Int
    /// The last reason given (the provider's, such as `BadDeviceToken`, or the relay's).
    public var lastReason: String?
    /// The `apns-id` it is sent with; `nil` for FCM.
    public var apnsID: String?
    /// Milliseconds since the epoch: acceptance, last change, expiration.
    public var createdAt: Int64
    public var updatedAt: Int64
    public var expiresAt: Int64
    /// The furthest stage the phone's receipts reached (docs/receipts.md); nil: none came.
    public var deviceStage: ReceiptStage?

    /// Where this push is in the listing's order.
    public var cursor: PushCursor { PushCursor(createdAt: createdAt, pushID: pushID) }
}

/// One page of a push listing.
@MemberwiseInit
public struct PushPage: Sendable, Hashable {
    public var pushes: [PushSummary]
    /// Where the next page starts; `nil` when this page is the last.
    public var next: PushCursor?
}
