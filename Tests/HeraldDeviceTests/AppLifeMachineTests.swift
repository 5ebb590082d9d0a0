import HeraldDevice
import HeraldStore
import Testing

/// The app's life as a state machine: every transition and the actions it asks for.
@Suite("App life machine")
struct AppLifeMachineTests {
    /// A machine launched into the foreground with `conversation` on screen.
    static func foreground(_ conversation: String? = "c1", permission: NotificationPermission? = nil) -> AppLifeMachine
    {
        var machine = AppLifeMachine(permission: permission)
        _ = machine.handle(.launch(conversation: conversation))
        _ = machine.handle(.sessionReady)
        return machine
    }

    @Test("a launch starts the app; the session up, the conversation gets channel, heartbeat and a resync")
    func launchIntoConversation() {
        var machine = AppLifeMachine()
        #expect(machine.state == .notRunning)
        #expect(machine.handle(.launch(conversation: "c1")) == [.startApp])
        #expect(machine.state == .launching)
        #expect(
            machine.handle(.sessionReady) == [
                .openLiveChannel(activeIn: "c1"), .heartbeat(.active, conversation: "c1"), .startHeartbeatTimer,
                .resync(conversation: "c1"),
            ]
        )
        #expect(machine.state == .foreground)
        #expect(machine.conversation == "c1")
    }

    @Test("a launch without a conversation holds no channel and sends no heartbeat")
    func launchHome() {
        var machine = AppLifeMachine()
        _ = machine.handle(.launch(conversation: nil))
        #expect(machine.handle(.sessionReady) == [])
        #expect(machine.handle(.heartbeatDue) == [])
    }

    @Test("the heartbeat fires only in the foreground with a conversation on screen")
    func heartbeatOnlyInForeground() {
        var machine = Self.foreground()
        #expect(machine.handle(.heartbeatDue) == [.heartbeat(.active, conversation: "c1")])
        _ = machine.handle(.enterBackground)
        #expect(machine.handle(.heartbeatDue) == [])
    }

    @Test("background: timer stopped, background heartbeat, channel closed, chat disconnected; back: connected")
    func backgroundAndBack() {
        var machine = Self.foreground()
        #expect(
            machine.handle(.enterBackground) == [
                .stopHeartbeatTimer, .heartbeat(.background, conversation: "c1"), .closeLiveChannel,
                .chatDisconnect(conversation: "c1"),
            ]
        )
        #expect(machine.state == .background)
        #expect(machine.disconnected == "c1")
        #expect(
            machine.handle(.enterForeground) == [
                .chatConnect(conversation: "c1"), .openLiveChannel(activeIn: "c1"),
                .heartbeat(.active, conversation: "c1"), .startHeartbeatTimer,
            ]
        )
        #expect(machine.disconnected == nil)
        // Twice in a row changes nothing.
        #expect(machine.handle(.enterForeground) == [])
    }

    @Test("a tap in the background brings the app back to the tapped conversation")
    func tapInBackground() {
        var machine = Self.foreground()
        _ = machine.handle(.enterBackground)
        #expect(
            machine.handle(.tapped(conversation: "c2")) == [
                .chatConnect(conversation: "c1"), .openLiveChannel(activeIn: "c2"),
                .heartbeat(.active, conversation: "c2"), .startHeartbeatTimer,
            ]
        )
        #expect(machine.conversation == "c2")
    }

    @Test("terminated from the foreground: through the background first; a tap launches, reconnects and resyncs")
    func terminateThenTap() {
        var machine = Self.foreground()
        #expect(
            machine.handle(.terminate) == [
                .stopHeartbeatTimer, .heartbeat(.background, conversation: "c1"), .closeLiveChannel,
                .chatDisconnect(conversation: "c1"), .stopApp,
            ]
        )
        #expect(machine.state == .notRunning)
        #expect(machine.handle(.enterForeground) == [])
        #expect(machine.handle(.tapped(conversation: "c1")) == [.startApp])
        #expect(
            machine.handle(.sessionReady) == [
                .chatConnect(conversation: "c1"), .openLiveChannel(activeIn: "c1"),
                .heartbeat(.active, conversation: "c1"), .startHeartbeatTimer, .resync(conversation: "c1"),
            ]
        )
    }

    @Test("a chat left before the last termination is rejoined at the next launch")
    func disconnectRemembered() {
        var machine = AppLifeMachine(disconnected: "c9")
        _ = machine.handle(.launch(conversation: nil))
        #expect(machine.handle(.sessionReady) == [.chatConnect(conversation: "c9")])
    }

    @Test("terminated from the background: only the process ends")
    func terminateFromBackground() {
        var machine = Self.foreground()
        _ = machine.handle(.enterBackground)
        #expect(machine.handle(.terminate) == [.stopApp])
        #expect(machine.disconnected == "c1")
    }

    @Test("a crash tells the relay nothing: the active heartbeat stays until its time to live")
    func crash() {
        var machine = Self.foreground()
        #expect(machine.handle(.crash) == [.stopHeartbeatTimer, .closeLiveChannel, .stopApp])
        #expect(machine.state == .notRunning)
        #expect(machine.disconnected == nil)
    }

    @Test("another conversation in the foreground: presence moves, one timer; back to the list: background")
    func switchConversation() {
        var machine = Self.foreground()
        #expect(
            machine.handle(.open(conversation: "c2")) == [
                .livePresence(activeIn: "c2"), .heartbeat(.active, conversation: "c2"), .resync(conversation: "c2"),
            ]
        )
        #expect(machine.handle(.open(conversation: "c2")) == [])
        #expect(
            machine.handle(.open(conversation: nil)) == [
                .stopHeartbeatTimer, .heartbeat(.background, conversation: "c2"), .closeLiveChannel,
            ]
        )
        #expect(
            machine.handle(.open(conversation: "c3")) == [
                .openLiveChannel(activeIn: "c3"), .heartbeat(.active, conversation: "c3"), .startHeartbeatTimer,
                .resync(conversation: "c3"),
            ]
        )
    }

    @Test("the permission: reported at launch and when it changes; denied says push is not available")
    func permission() {
        var machine = AppLifeMachine(permission: .denied)
        #expect(machine.handle(.launch(conversation: nil)) == [.startApp, .showPushUnavailable])
        #expect(machine.handle(.sessionReady) == [.reportPermission(.denied)])
        #expect(machine.handle(.permission(.denied)) == [])
        #expect(machine.handle(.permission(.granted)) == [.reportPermission(.granted), .showPushAvailable])
        #expect(machine.handle(.permission(.denied)) == [.reportPermission(.denied), .showPushUnavailable])
        // Not running: reported at the next launch.
        _ = machine.handle(.terminate)
        #expect(machine.handle(.permission(.granted)) == [])
        _ = machine.handle(.launch(conversation: nil))
        #expect(machine.handle(.sessionReady) == [.reportPermission(.granted)])
    }

    @Test("an app that never asked reports nothing")
    func permissionNeverAsked() {
        var machine = AppLifeMachine()
        _ = machine.handle(.launch(conversation: nil))
        #expect(machine.handle(.sessionReady) == [])
    }

    @Test("logout: timer and channel stop, the device is deleted; a relaunch starts over")
    func logout() {
        var machine = Self.foreground()
        #expect(machine.handle(.logout) == [.stopHeartbeatTimer, .closeLiveChannel, .logout])
        #expect(machine.state == .loggedOut)
        #expect(machine.conversation == nil)
        #expect(machine.handle(.heartbeatDue) == [])
        #expect(machine.handle(.enterBackground) == [])
        #expect(machine.handle(.logout) == [])
        #expect(machine.handle(.terminate) == [.stopApp])
        #expect(machine.handle(.launch(conversation: nil)) == [.startApp])

        var background = Self.foreground()
        _ = background.handle(.enterBackground)
        #expect(background.handle(.logout) == [.logout])
        #expect(background.disconnected == nil)
    }

    @Test("events that cannot happen in a state change nothing")
    func impossibleEvents() {
        var machine = AppLifeMachine()
        for event: AppLifeMachine.Event in [.sessionReady, .enterBackground, .enterForeground, .heartbeatDue, .logout] {
            #expect(machine.handle(event) == [])
            #expect(machine.state == .notRunning)
        }
        _ = machine.handle(.launch(conversation: "c1"))
        #expect(machine.handle(.launch(conversation: "c1")) == [])
        #expect(machine.handle(.enterBackground) == [])
        #expect(machine.state == .launching)
    }
}
