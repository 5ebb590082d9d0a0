public import HeraldDomain

/// The app's life as iOS and Android give it (seeds 000 §3, 001, 003, 004), as a state machine:
/// events in, actions out, no I/O. The phone (`EmulatedPhone+Life`) performs the actions.
///
/// - Not running (terminated, or never started) → launching (the process starts, the SDK session
///   comes up) → foreground ⇄ background → terminated again; logged out from any running state.
/// - In the foreground with a conversation on screen the app holds the live channel (active in
///   that conversation) and sends a presence heartbeat every 30 s with a 60 s time to live
///   (seed 000); leaving it sends `background`, closes the channel and disconnects from the chat
///   with the last transcript position seen (seed 001); coming back connects again (the relay
///   answers the events missed). A launch resyncs the conversation from its transcript.
/// - The notification permission is reported to the relay at each launch and when it changes;
///   while it is denied the app says "Push service not available" (seed 004).
public struct AppLifeMachine: Sendable {
    /// Where the app is.
    public enum State: Sendable, Hashable {
        /// Not running: terminated by the user or the system, or never started. The system still
        /// receives pushes (the NSE, the FCM service) and a tap launches the app.
        case notRunning
        /// The process started; the SDK session is not up yet.
        case launching
        case foreground
        case background
        /// The user logged out: the relay forgot the device, the keys and credential are gone.
        case loggedOut

        /// As a person says it: "not running", "foreground", "logged out".
        public var description: String {
            switch self {
            case .notRunning: "not running"
            case .launching: "launching"
            case .foreground: "foreground"
            case .background: "background"
            case .loggedOut: "logged out"
            }
        }
    }

    /// What happened.
    public enum Event: Sendable, Hashable {
        /// The user opens the app (or a tap launches it), showing `conversation` if given.
        case launch(conversation: String?)
        /// The SDK session runs with a device the relay knows.
        case sessionReady
        /// The user leaves the app (home, another app, the lock screen).
        case enterBackground
        /// The user comes back to the app (app switcher, icon).
        case enterForeground
        /// The user taps a notification of `conversation`.
        case tapped(conversation: String?)
        /// The user opens a conversation (nil: back to the list).
        case open(conversation: String?)
        /// The heartbeat timer fired.
        case heartbeatDue
        /// The user or the system ended the app; it went through the background first.
        case terminate
        /// The app died without a word (a crash): the relay learns it only from the heartbeat's
        /// time to live.
        case crash
        /// The notification permission is now this (the user's answer, or the settings app).
        case permission(NotificationPermission)
        /// The user logs out.
        case logout
    }

    /// What the app must do, in order.
    public enum Action: Sendable, Hashable {
        /// Start the app's process: the SDK session with the late-token rule.
        case startApp
        /// End the process: stop the SDK session.
        case stopApp
        /// `PUT /v1/devices/{id}/notifications`.
        case reportPermission(NotificationPermission)
        /// Tell the user push does not work ("Push service not available").
        case showPushUnavailable
        /// Notifications are allowed again: push works if the app has its tokens.
        case showPushAvailable
        /// `GET /v1/devices/{id}/live`, then a presence frame active in `activeIn` (or background).
        case openLiveChannel(activeIn: String?)
        /// A presence frame on the open channel (the conversation on screen changed).
        case livePresence(activeIn: String?)
        case closeLiveChannel
        /// `PUT /v1/devices/{id}/presence`: `active` in the conversation, or `background`.
        case heartbeat(PresenceState, conversation: String?)
        /// Fire `heartbeatDue` every `heartbeatInterval` seconds until stopped.
        case startHeartbeatTimer
        case stopHeartbeatTimer
        /// `POST /v1/devices/{id}/chats/{conversation}/disconnect` with the last position seen.
        case chatDisconnect(conversation: String)
        /// `POST /v1/devices/{id}/chats/{conversation}/connect`: the events missed meanwhile.
        case chatConnect(conversation: String)
        /// `GET /v1/chats/{conversation}/transcript?after=<last seen>`: show what came.
        case resync(conversation: String)
        /// `DELETE /v1/devices/{id}`, then forget the keys, the credential and the tokens.
        case logout
    }

    /// Seconds between heartbeats, and an active heartbeat's time to live (seed 000).
    public static let heartbeatInterval = 30
    public static let heartbeatTTL = 60

    public private(set) var state: State = .notRunning
    /// The conversation on screen (in the foreground) or to come back to.
    public private(set) var conversation: String?
    /// The chat the app disconnected from when it left, until it connects again.
    public private(set) var disconnected: String?
    /// The permission the user gave, if the app asked.
    public private(set) var permission: NotificationPermission?

    /// - Parameters:
    ///   - disconnected: a chat the app left before it was last terminated (from its storage).
    ///   - permission: the permission as the system has it, if the app has asked.
    public init(disconnected: String? = nil, permission: NotificationPermission? = nil) {
        self.disconnected = disconnected
        self.permission = permission
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (.notRunning, .launch(let conversation)), (.notRunning, .tapped(let conversation)):
            state = .launching
            if let conversation { self.conversation = conversation }
            var actions: [Action] = [.startApp]
            if permission == .denied { actions.append(.showPushUnavailable) }
            return actions
        case (.launching, .sessionReady):
            state = .foreground
            var actions: [Action] = permission.map { [.reportPermission($0)] } ?? []
            actions += cameBack()
            if let conversation { actions.append(.resync(conversation: conversation)) }
            return actions
        case (.foreground, .enterBackground):
            state = .background
            return left()
        case (.background, .enterForeground):
            state = .foreground
            return cameBack()
        case (.background, .tapped(let conversation)):
            if let conversation { self.conversation = conversation }
            state = .foreground
            return cameBack()
        case (.foreground, .tapped(let conversation?)), (.foreground, .open(let conversation?)):
            return show(conversation)
        case (.foreground, .open(nil)):
            guard let old = conversation else { return [] }
            conversation = nil
            return [.stopHeartbeatTimer, .heartbeat(.background, conversation: old), .closeLiveChannel]
        case (.background, .open(let conversation)), (.launching, .open(let conversation)):
            self.conversation = conversation
            return []
        case (.foreground, .heartbeatDue):
            guard let conversation else { return [] }
            return [.heartbeat(.active, conversation: conversation)]
        case (.foreground, .terminate):
            state = .notRunning
            return left() + [.stopApp]
        case (.background, .terminate), (.launching, .terminate):
            state = .notRunning
            return [.stopApp]
        case (.foreground, .crash), (.background, .crash), (.launching, .crash):
            // Nothing reaches the relay: the timer and the channel die with the process.
            state = .notRunning
            return [.stopHeartbeatTimer, .closeLiveChannel, .stopApp]
        case (_, .permission(let permission)):
            guard permission != self.permission else { return [] }
            let wasDenied = self.permission == .denied
            self.permission = permission
            switch state {
            case .foreground, .background:
                let shown: [Action] =
                    permission == .denied ? [.showPushUnavailable] : wasDenied ? [.showPushAvailable] : []
                return [.reportPermission(permission)] + shown
            case .launching:
                return permission == .denied ? [.showPushUnavailable] : []
            case .notRunning, .loggedOut:
                // Reported at the next launch.
                return []
            }
        case (.foreground, .logout), (.background, .logout):
            let wasForeground = state == .foreground
            state = .loggedOut
            conversation = nil
            disconnected = nil
            return (wasForeground ? [.stopHeartbeatTimer, .closeLiveChannel] : []) + [.logout]
        case (.loggedOut, .terminate), (.loggedOut, .crash):
            state = .notRunning
            return [.stopApp]
        default:
            // Not possible in this state (a tap on a terminated app's notification is a launch,
            // a heartbeat due in the background is a timer that was just stopped): nothing.
            return []
        }
    }

    /// Leaving the foreground: the relay hears background at once (not after the time to live),
    /// the channel closes, and the chat on screen is left at the last position seen.
    private mutating func left() -> [Action] {
        guard let conversation else { return [] }
        disconnected = conversation
        return [
            .stopHeartbeatTimer, .heartbeat(.background, conversation: conversation), .closeLiveChannel,
            .chatDisconnect(conversation: conversation),
        ]
    }

    /// Entering the foreground: back in the chat left, then the channel and heartbeats for the
    /// conversation on screen.
    private mutating func cameBack() -> [Action] {
        var actions: [Action] = []
        if let chat = disconnected {
            disconnected = nil
            actions.append(.chatConnect(conversation: chat))
        }
        guard let conversation else { return actions }
        return actions + [
            .openLiveChannel(activeIn: conversation), .heartbeat(.active, conversation: conversation),
            .startHeartbeatTimer,
        ]
    }

    /// Another conversation on screen while in the foreground: its history loads (the resync).
    private mutating func show(_ new: String) -> [Action] {
        guard new != conversation else { return [] }
        let hadChannel = conversation != nil
        conversation = new
        return [
            hadChannel ? .livePresence(activeIn: new) : .openLiveChannel(activeIn: new),
            .heartbeat(.active, conversation: new),
        ] + (hadChannel ? [] : [.startHeartbeatTimer]) + [.resync(conversation: new)]
    }
}
