import Foundation
public import HeraldDomain
public import HeraldRelayAPI
import Synchronization

/// A message the app shows inside a conversation (not a notification): one that came over the
/// live channel while the conversation was on screen, or a transcript event from a resync or a
/// reconnect.
public struct AppMessage: Sendable, Hashable {
    public enum Source: String, Sendable, Hashable {
        /// Over the live channel: a message (acknowledged) or a chat event (`chat_event`).
        case live
        /// From the chat's transcript (resync at launch, or the events missed, on reconnect).
        case transcript
    }

    public var conversation: String
    /// The message id (live) or the transcript position.
    public var id: String
    public var from: String
    public var text: String
    public var source: Source
}

/// The app's life on the phone: `AppLifeMachine` and what performing its actions left behind.
final class LifeLink: Sendable {
    struct State {
        var machine: AppLifeMachine
        /// The transcript position seen last, by conversation (kept in the app's storage).
        var positions: [String: Int]
        var heartbeatTimer: PhoneTasks.Handle?
        /// The last life event being handled: events are handled one after another.
        var tail: Task<Void, any Error>?
        var shown: [AppMessage] = []
        var permissionReports: [NotificationPermission] = []
        var heartbeats: [HeartbeatRequest] = []
    }

    /// What the app keeps across launches (`app-state.json` in its container).
    struct Saved: Codable {
        var positions: [String: Int] = [:]
        var disconnected: String?
    }

    let state: Mutex<State>

    init(saved: Saved, permission: NotificationPermission?) {
        state = Mutex(
            State(
                machine: AppLifeMachine(disconnected: saved.disconnected, permission: permission),
                positions: saved.positions
            )
        )
    }

    static func load(_ store: AppGroupStore) -> Saved {
        guard let data = FileManager.default.contents(atPath: store.path("app-state.json")),
            let saved = try? JSONDecoder().decode(Saved.self, from: data)
        else { return Saved() }
        return saved
    }
}

// MARK: The app's life (seeds 000 §3, 001, 003, 004)

extension EmulatedPhone {
    /// Set while a life event's actions run: an action that itself starts a session must not
    /// queue a second event behind the one running (it would wait for itself).
    @TaskLocal static var performingLife = false

    /// Where the app is: not running, launching, foreground, background, logged out.
    public var life: AppLifeMachine.State { lifeLink.state.withLock { $0.machine.state } }
    /// The conversation on screen (or to come back to).
    public var conversationOnScreen: String? { lifeLink.state.withLock { $0.machine.conversation } }
    /// What the app showed inside conversations, oldest first.
    public var appMessages: [AppMessage] { lifeLink.state.withLock { $0.shown } }
    /// Each `PUT /v1/devices/{id}/notifications` the app sent, in order.
    public var permissionReports: [NotificationPermission] { lifeLink.state.withLock { $0.permissionReports } }
    /// Each presence heartbeat the app sent, in order.
    public var heartbeats: [HeartbeatRequest] { lifeLink.state.withLock { $0.heartbeats } }
    /// Whether the user denied notifications: the system shows none of the app's.
    public var notificationsDenied: Bool { lifeLink.state.withLock { $0.machine.permission == .denied } }

    /// The user leaves the app: background heartbeat, live channel closed, chat left.
    public func enterBackground() async throws { try await lifeEvent(.enterBackground) }
    /// The user comes back: the chat rejoined (with what was missed), channel and heartbeats.
    public func enterForeground() async throws { try await lifeEvent(.enterForeground) }
    /// The user swipes the app away (it went through the background first). Pushes still come
    /// (the extension, the messaging service); a tap launches the app again.
    public func terminate() async throws { try await lifeEvent(.terminate) }
    /// The app dies without a word: its active presence stays until its time to live passes.
    public func crash() async throws { try await lifeEvent(.crash) }
    /// The user opens a conversation (nil: back to the list).
    public func open(conversation: String?) async throws { try await lifeEvent(.open(conversation: conversation)) }
    /// The user logs out: `DELETE /v1/devices/{id}`; keys and credential are forgotten.
    public func logout() async throws { try await lifeEvent(.logout) }
    /// The user allows or denies notifications (the permission prompt, or the settings app).
    public func setNotificationPermission(_ permission: NotificationPermission) async throws {
        try await lifeEvent(.permission(permission))
    }

    /// Handles one life event after those before it, performing its actions in order; the first
    /// action that fails ends it with its error.
    func lifeEvent(_ event: AppLifeMachine.Event) async throws {
        let task = lifeLink.state.withLock { state -> Task<Void, any Error> in
            let previous = state.tail
            // One task per event, not a loop: it lives while the event's actions run, queued
            // behind the one before. It is not the caller's child on purpose: a caller that is
            // cancelled (a heartbeat timer stopped) must not cut an event's actions in half and
            // leave the app between two states. `stop()` waits for the last one.
            let task = Task {
                _ = await previous?.result
                let actions = self.lifeLink.state.withLock { $0.machine.handle(event) }
                try await self.performLife(actions)
            }
            state.tail = task
            return task
        }
        try await task.value
    }

    /// The SDK session started (a token arrived): a launch waiting for it goes on.
    func sessionStarted() async {
        guard !Self.performingLife, life == .launching else { return }
        do {
            try await lifeEvent(.sessionReady)
        } catch {
            record(diagnostic: "\(error)")
        }
    }

    private func performLife(_ actions: [AppLifeMachine.Action]) async throws {
        try await Self.$performingLife.withValue(true) {
            for action in actions { try await perform(action) }
        }
        saveLife()
        changed()
    }

    private func perform(_ action: AppLifeMachine.Action) async throws {
        switch action {
        case .startApp:
            try await startApp()
        case .stopApp:
            stopHeartbeatTimer()
            stopAppProcess()
        case .reportPermission(let permission):
            try await reportPermission(permission)
        case .showPushAvailable:
            if pushAvailable {
                timeline.record("app", "user", "push service available", detail: "notifications allowed")
            }
        case .showPushUnavailable:
            timeline.record("app", "user", "Push service not available", detail: "notifications are not permitted")
        case .openLiveChannel(let conversation):
            guard let channel = connectedChannel() else { throw DeviceError.store("the phone is not activated yet") }
            channel.send(.presence(activeIn: conversation))
            recordPresenceFrame(conversation)
        case .livePresence(let conversation):
            connectedChannel()?.send(.presence(activeIn: conversation))
            recordPresenceFrame(conversation)
        case .closeLiveChannel:
            closeCallChannel()
            timeline.record("app", "relay", "live channel closed by the app")
        case .heartbeat(let state, let conversation):
            try await sendHeartbeat(state, conversation: conversation)
        case .startHeartbeatTimer:
            startHeartbeatTimer()
        case .stopHeartbeatTimer:
            stopHeartbeatTimer()
        case .chatDisconnect(let conversation):
            try await disconnectChat(conversation)
        case .chatConnect(let conversation):
            try await connectChat(conversation)
        case .resync(let conversation):
            try await resync(conversation)
        case .logout:
            try await logOutAtRelay()
        }
    }

    /// Starts the app's process; once the session the launch started is up, the app is too.
    private func startApp() async throws {
        try await startAppProcess()
        // The session the launch started (activated at the relay): the app is up.
        if session?.isStarted == true, store.registration() != nil {
            try await performLife(lifeLink.state.withLock { $0.machine.handle(.sessionReady) })
        }
    }

    /// The timeline's line for a presence frame sent on the live channel.
    private func recordPresenceFrame(_ conversation: String?) {
        timeline.record(
            "app",
            "relay",
            "live channel: " + (conversation.map { "active in \($0)" } ?? "background"),
            detail: "presence frame"
        )
    }

    /// Sends a heartbeat (an active one lasts the heartbeat's ttl), kept for the tests to see.
    private func sendHeartbeat(_ state: PresenceState, conversation: String?) async throws {
        let ttl = state == .active ? AppLifeMachine.heartbeatTTL : nil
        lifeLink.state.withLock {
            $0.heartbeats.append(HeartbeatRequest(conversation: conversation, state: state, ttl: ttl))
        }
        try await presence(state, conversation: conversation, ttl: ttl)
    }

    /// Tells the relay the app left the chat, at the transcript position it had read.
    private func disconnectChat(_ conversation: String) async throws {
        let (registration, credential) = try activated()
        let position = lifeLink.state.withLock { $0.positions[conversation] ?? 0 }
        try await http.chatDisconnect(
            relay: registration.relayURL,
            deviceID: registration.deviceID,
            conversation: conversation,
            position: position,
            credential: credential
        )
        timeline.record(
            "app",
            "relay",
            "chat disconnected",
            detail: "\(conversation), transcript position \(position)"
        )
    }

    /// Reconnects to the chat and shows what happened in it since the disconnect.
    private func connectChat(_ conversation: String) async throws {
        let (registration, credential) = try activated()
        let view = try await http.chatConnect(
            relay: registration.relayURL,
            deviceID: registration.deviceID,
            conversation: conversation,
            credential: credential
        )
        timeline.record(
            "app",
            "relay",
            "chat connected",
            detail: "\(conversation): \(view.events.count) event(s) since the disconnect"
        )
        show(view)
    }

    /// Deletes the device at the relay and forgets its keys and credential.
    private func logOutAtRelay() async throws {
        let (registration, credential) = try activated()
        try await http.logout(relay: registration.relayURL, deviceID: registration.deviceID, credential: credential)
        forgetActivation()
        timeline.record(
            "app",
            "relay",
            "logged out",
            detail: "DELETE /v1/devices/\(registration.deviceID); keys and credential forgotten"
        )
    }

    private func activated() throws -> (AppGroupStore.Registration, String) {
        guard let registration = store.registration(), let credential = store.credential() else {
            throw DeviceError.store("the phone is not activated")
        }
        return (registration, credential)
    }

    /// Reports the permission; a relay that refuses it is a diagnostic, not the app's end.
    private func reportPermission(_ permission: NotificationPermission) async throws {
        let (registration, credential) = try activated()
        lifeLink.state.withLock { $0.permissionReports.append(permission) }
        do {
            let view = try await http.reportPermission(
                relay: registration.relayURL,
                deviceID: registration.deviceID,
                permission,
                credential: credential
            )
            timeline.record(
                "app",
                "relay",
                "notifications \(view.permission.rawValue) reported",
                detail: "PUT /v1/devices/\(registration.deviceID)/notifications"
            )
        } catch {
            timeline.record(
                "relay",
                "app",
                "notifications \(permission.rawValue) not taken",
                detail: "PUT /v1/devices/\(registration.deviceID)/notifications: \(error)"
            )
            record(diagnostic: "the relay did not take the notification permission: \(error)")
        }
    }

    /// Loads the conversation's events after the last position seen
    /// (`GET /v1/chats/{conversation}/transcript?after=`).
    private func resync(_ conversation: String) async throws {
        let (registration, credential) = try activated()
        let after = lifeLink.state.withLock { $0.positions[conversation] ?? 0 }
        let view = try await http.transcript(
            relay: registration.relayURL,
            conversation: conversation,
            after: after,
            credential: credential
        )
        timeline.record(
            "app",
            "relay",
            "conversation resynced",
            detail: "GET /v1/chats/\(conversation)/transcript?after=\(after): \(view.events.count) event(s)"
        )
        show(view)
    }

    /// Shows the transcript events the relay gave, and remembers the last position; an event at
    /// or before that position was shown already (a live frame and a resync may both bring it).
    private func show(_ view: TranscriptView, source: AppMessage.Source = .transcript) {
        for event in view.events {
            let text = event.text.isEmpty ? event.type : event.text
            let message = AppMessage(
                conversation: view.conversation,
                id: "position \(event.position)",
                from: event.from.name,
                text: text,
                source: source
            )
            let new = lifeLink.state.withLock { state -> Bool in
                guard event.position > state.positions[view.conversation] ?? 0 else { return false }
                state.positions[view.conversation] = event.position
                state.shown.append(message)
                return true
            }
            guard new, event.type == "Message.Text" || !event.text.isEmpty else { continue }
            timeline.record(
                "app",
                "user",
                "shown in the conversation",
                detail: "\(view.conversation), "
                    + (source == .live ? "live, " : "") + "transcript position \(event.position)",
                userSees: event.from.name + ": " + text
            )
        }
        saveLife()
    }

    /// A chat event over the live channel: shown in the conversation when it follows the last
    /// position seen; after a gap (a frame missed, or events the relay does not send live, such
    /// as typing notices) the app resyncs instead, which brings it with what came before.
    func liveChatEvent(_ event: TranscriptEventView, in conversation: String) async {
        timeline.record(
            "relay",
            "app",
            "chat event received live",
            detail: "\(conversation), \(event.type) at transcript position \(event.position)"
        )
        let seen = lifeLink.state.withLock { $0.positions[conversation] ?? 0 }
        guard event.position > seen + 1 else {
            show(TranscriptView(conversation: conversation, events: [event]), source: .live)
            changed()
            return
        }
        timeline.record(
            "app",
            "app",
            "transcript gap",
            detail: "\(conversation): position \(event.position) after \(seen)"
        )
        do {
            try await resync(conversation)
        } catch {
            record(diagnostic: "resync after a transcript gap: \(error)")
        }
        changed()
    }

    /// A message over the live channel while the conversation is on screen: shown in the
    /// conversation, no notification, acknowledged so the relay does not push it.
    func liveMessage(_ message: LiveMessage) async {
        timeline.record(
            "relay",
            "app",
            "message received live",
            detail: "conversation \(message.conversation)",
            subject: message.messageID
        )
        lifeLink.state.withLock {
            $0.shown.append(
                AppMessage(
                    conversation: message.conversation,
                    id: message.messageID,
                    from: message.from.name,
                    text: message.text,
                    source: .live
                )
            )
        }
        timeline.record(
            "app",
            "user",
            "shown in the conversation",
            detail: "\(message.conversation), live, no notification",
            subject: message.messageID,
            userSees: message.from.name + ": " + message.text
        )
        connectedChannel()?.send(.ack(messageID: message.messageID))
        timeline.record("app", "relay", "message acknowledged", detail: "ack", subject: message.messageID)
        changed()
    }

    /// A tap on a notification: launches the app (terminated), brings it back (background) or
    /// opens the conversation (foreground).
    func appOpened(by conversation: String?) async throws {
        try await lifeEvent(.tapped(conversation: conversation))
    }

    /// A push the system does not show: the user denied notifications.
    func withheld(by component: String, subject: String?) {
        timeline.record(
            component,
            "notification-center",
            "notification not shown",
            detail: "notifications are not permitted",
            subject: subject
        )
        changed()
    }

    // MARK: Timers and storage

    private func startHeartbeatTimer() {
        let clock = configuration.clock
        let interval = Int64(AppLifeMachine.heartbeatInterval) * 1000
        // The first deadline now, not when the task first runs: a clock moved meanwhile counts.
        let first = clock.now() + interval
        let timer = tasks.start { [weak self] in
            var next = first
            while !Task.isCancelled {
                do { try await clock.sleep(until: next) } catch { return }
                // When it woke, not when the heartbeat's request returned: a deadline reached
                // while the request was in flight is due, not missed.
                let woke = clock.now()
                guard let self, !Task.isCancelled else { return }
                do {
                    try await self.lifeEvent(.heartbeatDue)
                } catch {
                    self.record(diagnostic: "heartbeat: \(error)")
                }
                // A clock moved far ahead fires once, as a coalesced system timer does.
                while next <= woke { next += interval }
            }
        }
        lifeLink.state.withLock { state -> PhoneTasks.Handle? in
            defer { state.heartbeatTimer = timer }
            return state.heartbeatTimer
        }?.cancel()
    }

    /// The phone is switched off (`shutdown()`): the app is not running, and the next `launch()`
    /// starts it again; the chat it left and the permission stay.
    func lifeEnded() {
        lifeLink.state.withLock { state in
            state.machine = AppLifeMachine(
                disconnected: state.machine.disconnected,
                permission: state.machine.permission
            )
        }
    }

    func stopHeartbeatTimer() {
        lifeLink.state.withLock { state -> PhoneTasks.Handle? in
            defer { state.heartbeatTimer = nil }
            return state.heartbeatTimer
        }?.cancel()
    }

    private func saveLife() {
        let saved = lifeLink.state.withLock {
            LifeLink.Saved(positions: $0.positions, disconnected: $0.machine.disconnected)
        }
        guard let data = try? JSONEncoder().encode(saved) else { return }
        try? store.replace("app-state.json", with: Array(data))
    }

    /// Logout: the device's registration, credential and keys are gone (the tokens are the
    /// system's and stay).
    private func forgetActivation() {
        for name in ["registration.json", "credential", "app-state.json"] {
            try? FileManager.default.removeItem(atPath: store.path(name))
        }
        store.removeKeys(except: [])
        lifeLink.state.withLock { $0.positions = [:] }
    }
}
