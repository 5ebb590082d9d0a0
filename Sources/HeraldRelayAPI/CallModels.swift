public import HeraldDomain
import HeraldMacros

/// `GET /v1/calls/{id}` and the answer to a call's cancel, ringing, answer or decline: the call's
/// state, who answered or declined, what each device reported, and when. No caller name.
@MemberwiseInit
public struct CallView: Sendable, Codable, Hashable {
    @MemberwiseInit
    public struct Device: Sendable, Codable, Hashable {
        public var deviceID: String
        /// `pushed`, `ringing`, `answered` or `declined`.
        public var report: CallDeviceReport
        public var reportedAt: Int64?

        enum CodingKeys: String, CodingKey {
            case deviceID = "device_id"
            case report
            case reportedAt = "reported_at"
        }
    }

    public var callID: String
    public var userID: String
    /// The app whose devices the call rang.
    public var app: String
    public var state: CallState
    public var media: String
    public var answeredBy: String?
    public var declinedBy: String?
    /// Why it ended: `remote_ended` (cancelled), `unanswered` (missed).
    public var reason: String?
    public var createdAt: Int64
    /// When it is missed if nobody answers.
    public var expiresAt: Int64
    public var ringingAt: Int64?
    public var endedAt: Int64?
    public var devices: [Device]

    enum CodingKeys: String, CodingKey {
        case callID = "call_id"
        case userID = "user_id"
        case app, state, media
        case answeredBy = "answered_by"
        case declinedBy = "declined_by"
        case reason
        case createdAt = "created_at"
        case expiresAt = "expires_at"
        case ringingAt = "ringing_at"
        case endedAt = "ended_at"
        case devices
    }
}

/// The webhook event's `data` for a call's change: ids, the state and the reason, never the
/// caller.
@MemberwiseInit
public struct CallEventData: Sendable, Codable, Hashable {
    public var callID: String
    public var userID: String
    public var state: CallState
    public var deviceID: String?
    public var reason: String?

    enum CodingKeys: String, CodingKey {
        case callID = "call_id"
        case userID = "user_id"
        case state
        case deviceID = "device_id"
        case reason
    }
}
