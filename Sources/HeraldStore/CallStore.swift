import HeraldMacros

/// One device a call rang on.
@MemberwiseInit
public struct CallDeviceRecord: Sendable, Hashable {
    public var deviceID: String
    public var report: CallDeviceReport
    /// When the device last reported (`nil` while `pushed`).
    public var reportedAt: Int64?
}

/// A call as the relay keeps it, written with the call's ingest.
@MemberwiseInit
public struct CallRecord: Sendable, Hashable {
    /// The backend's call id (unique: a call id never rings twice).
    public var id: String
    /// The app whose webhook hears of the call (its first device's app; empty with no device).
    public var appID: String
    public var userID: String
    /// `audio` or `video`.
    public var media: String
    /// The caller (id and name) sealed with the master key; opened only for the missed-call
    /// alert.
    public var sealedCaller: [UInt8]
    public var state: CallState = .ringing
    /// The device that answered or declined.
    public var deviceID: String?
    /// Why it ended (`remote_ended`, `unanswered` …), if it did.
    public var reason: String?
    public var createdAt: Int64
    /// When it becomes missed if still ringing (its time to live).
    public var expiresAt: Int64
    /// When a device first reported ringing.
    public var ringingAt: Int64?
    public var endedAt: Int64?
    public var updatedAt: Int64
    /// The devices it rang on, in device id order.
    public var devices: [CallDeviceRecord]
}

/// A `call.stop` for a device whose live channel another relay node holds: written with the
/// call's end, taken by that node (woken like a live handover) and sent on the channel.
@MemberwiseInit
public struct CallStop: Sendable, Hashable {
    public var callID: String
    public var deviceID: String
    public var nodeID: String
    public var reason: CallStopReason
}

/// A ringing call ending: its new state, who ended it, and what is written with it.
@MemberwiseInit
public struct CallEnd: Sendable, Hashable {
    public var callID: String
    /// `answered`, `declined`, `cancelled` or `missed`.
    public var state: CallState
    /// The device that answered or declined (its own report becomes the state).
    public var deviceID: String?
    public var reason: String?
    public var at: Int64
    /// The webhook events reporting it.
    public var events: [WebhookEvent] = []
    /// Pushes queued with it (the missed-call alerts).
    public var pushes: [OutboxEntry] = []
    /// Stops for devices whose live channel another node holds.
    public var stops: [CallStop] = []
}

/// What became of a `CallEnd`.
public enum CallEndOutcome: Sendable, Hashable {
    /// This end won: the call as it is now.
    case ended(CallRecord)
    /// The call had ended already (another device answered first …): nothing was written.
    case alreadyEnded(CallRecord)
    /// No such call.
    case unknown
}

/// Calls and their life: the record written with the call's ingest, the devices' reports, the
/// end as a compare-and-set, the missed-call timer claimed once across nodes, and the stops
/// handed to the node holding a device's live channel.
public protocol CallStore: ChangeStore {
    /// The call with its devices, or `nil` if unknown.
    func call(id: String) async throws -> CallRecord?
    /// The calls still ringing, with their devices' reports, newest first (by creation, then id),
    /// at most `limit`.
    func ringingCalls(limit: Int) async throws -> [CallRecord]
    /// When the next ringing call's time to live passes, if any rings.
    func nextCallDue() async throws -> Int64?
}
