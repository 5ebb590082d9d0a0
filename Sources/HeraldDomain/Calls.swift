// The vocabulary of calls and callbacks: their states and what ends them.

/// Where a call is at the relay.
public enum CallState: String, Sendable, Hashable, Codable, CaseIterable {
    case ringing
    case answered
    case declined
    case cancelled
    case missed

    /// Every state but `ringing` is final.
    public var isEnded: Bool { self != .ringing }
}

/// What one device of a call last said of it.
public enum CallDeviceReport: String, Sendable, Hashable, Codable, CaseIterable {
    /// Its VoIP push was queued; the device said nothing yet.
    case pushed
    /// It shows the call.
    case ringing
    case answered
    case declined
}

/// Why a device must stop ringing (the `call.stop` frame's `reason`).
public enum CallStopReason: String, Sendable, Hashable, Codable, CaseIterable {
    case answeredElsewhere = "answered_elsewhere"
    case declinedElsewhere = "declined_elsewhere"
    /// The caller hung up.
    case remoteEnded = "remote_ended"
    /// Nobody answered in time.
    case unanswered
}

/// Where a callback is in its life (the relay's `CallbackMachine` moves it).
public enum CallbackState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Waiting for its time (the first push, or the next one after a snooze).
    case scheduled
    /// Pushed; waiting for the user's answer.
    case pushed
    /// The user is ready: the contact center connects.
    case connected
    /// The user cancelled.
    case cancelled
    /// Its expiration passed before an answer.
    case expired

    /// Nothing happens to it any more.
    public var isFinal: Bool {
        switch self {
        case .scheduled, .pushed: false
        case .connected, .cancelled, .expired: true
        }
    }
}
