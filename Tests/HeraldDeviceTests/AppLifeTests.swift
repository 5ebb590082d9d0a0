import AsyncHTTPClient
import Foundation
import HeraldDevice
import HeraldPush
import HeraldRelayAPI
import HeraldSimulation
import HeraldStore
import Logging
import Testing

@testable import HeraldCommands

/// The emulated app's life against a real sandbox, relay and provider (in-process, loopback, TLS
/// to the sandbox): heartbeats on the test clock, the live channel, background, terminated,
/// crash, logout, the notification permission, the APNs environment.
@Suite("Emulated app's life, end to end", .timeLimit(.minutes(3)))
struct AppLifeTests {
    struct Setup {
        var platform: DevicePlatform = .ios
        var permission: NotificationPermission?
        var environment: APNsEnvironment?
    }

    /// A phone (not launched yet) whose app timers run on the relay's test clock.
    static func withPhone(
        _ setup: Setup = Setup(),
        _ body: (EmulatedPhone, SimulationEndpoints, SimulatedBackend, TestClock) async throws -> Void
    ) async throws {
        let clock = TestClock()
        var logger = Logger(label: "test.life")
        logger.logLevel = .critical
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let directory = NSTemporaryDirectory() + "herald-life-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            try await SimulationStack.with(clock: clock, logger: logger) { endpoints in
                let (phone, backend) = try endpoints.phoneAndBackend(
                    userID: "u1",
                    storeDirectory: directory,
                    clock: clock,
                    timeline: Timeline(clock: clock),
                    http: http,
                    logger: logger
                ) { configuration in
                    configuration.platform = setup.platform
                    configuration.notificationPermission = setup.permission
                    configuration.apnsEnvironment = setup.environment
                }
                defer { phone.shutdown() }
                try await Simulation.$endpoints.withValue(endpoints) {
                    try await body(phone, endpoints, backend, clock)
                }
            }
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    static func withTokens(_ phone: EmulatedPhone) async throws {
        let ios = phone.configuration.platform == .ios
        try await phone.wait("the push tokens") { phone in
            guard let session = phone.session, session.isStarted else { return false }
            return session.tokens.messaging != nil && (!ios || session.tokens.voip != nil)
        }
    }

    static func message(_ conversation: String, _ text: String) -> String {
        #"{"to":"u1","from":{"id":"agent-7","name":"Dana"},"conversation":"\#(conversation)","text":"\#(text)"}"#
    }

    /// The relay's view of the user's devices (presence included).
    static func devices(_ backend: SimulatedBackend) async throws -> UserDevicesView {
        try await backend.request(.GET, "/v1/users/u1/devices", nil, expect: 200)
    }

    @Test("foreground: heartbeat every 30 s on the test clock, messages live with no notification; background: pushed")
    func foregroundAndBackground() async throws {
        try await Self.withPhone { phone, _, backend, clock in
            try await phone.launch(showing: "c1")
            try await Self.withTokens(phone)
            try await Simulation.waitForLive(phone, activeIn: "c1")
            #expect(phone.life == .foreground)
            #expect(phone.heartbeats == [HeartbeatRequest(conversation: "c1", state: .active, ttl: 60)])
            // No real time passes for the timer: only the test clock moves it.
            clock.advance(by: .seconds(30))
            try await phone.wait("the second heartbeat") { $0.heartbeats.count == 2 }
            clock.advance(by: .seconds(30))
            try await phone.wait("the third heartbeat") { $0.heartbeats.count == 3 }
            let presence = try #require(try await Self.devices(backend).devices.first?.presence)
            #expect(presence.state == .active && presence.conversation == "c1")
            #expect(presence.expiresAt - presence.updatedAt == 60_000)

            let live = try await backend.post("/v1/messages", Self.message("c1", "live hello"))
            #expect(live.pushes.isEmpty)
            #expect(live.skipped.map(\.reason) == ["delivered_live"])
            try await phone.wait("the live message") { $0.appMessages.contains { $0.id == live.id } }
            #expect(phone.appMessages.last?.source == .live && phone.appMessages.last?.text == "live hello")
            #expect(phone.notifications.isEmpty)
            try await Simulation.waitForAcknowledgement(phone, messageID: live.id)

            try await phone.enterBackground()
            try await Simulation.waitForLive(phone, activeIn: nil)
            #expect(phone.life == .background)
            #expect(phone.heartbeats.last == HeartbeatRequest(conversation: "c1", state: .background, ttl: nil))
            #expect(try await Self.devices(backend).devices.first?.presence?.state == .background)
            // No heartbeat in the background, however long.
            clock.advance(by: .seconds(90))
            let pushed = try await backend.post("/v1/messages", Self.message("c1", "while away"))
            #expect(pushed.pushes.count == 1)
            try await phone.wait("the notification") { $0.notifications.count == 1 }
            #expect(phone.notifications.first?.body == "while away")
            #expect(phone.heartbeats.count == 4)
            #expect(phone.timeline.all.contains { $0.step == "chat disconnected" })

            try await phone.enterForeground()
            try await Simulation.waitForLive(phone, activeIn: "c1")
            #expect(phone.timeline.all.contains { $0.step == "chat connected" })
            #expect(phone.diagnostics.isEmpty)
        }
    }

    @Test("a crash says nothing: the active presence keeps pushes away until its 60 s run out")
    func crashLeavesPresenceUntilTTL() async throws {
        try await Self.withPhone { phone, _, backend, clock in
            try await phone.launch(showing: "c1")
            try await Self.withTokens(phone)
            try await Simulation.waitForLive(phone, activeIn: "c1")
            try await phone.crash()
            try await Simulation.waitForLive(phone, activeIn: nil)
            #expect(phone.life == .notRunning)
            let early = try await backend.post("/v1/messages", Self.message("c1", "too early"))
            #expect(early.pushes.isEmpty)
            #expect(early.skipped.map(\.reason) == ["active_in_conversation"])
            clock.advance(by: .seconds(61))
            let late = try await backend.post("/v1/messages", Self.message("c1", "after the ttl"))
            #expect(late.pushes.count == 1)
            // The app is not running: the extension shows it.
            try await phone.wait("the notification") { $0.notifications.count == 1 }
            #expect(phone.heartbeats.count == 1)
        }
    }

    @Test(
        "terminated: the chat's push shown while the app is not running; the tap launches, reconnects and resyncs",
        arguments: [DevicePlatform.ios, .android]
    )
    func terminatedTapLaunches(platform: DevicePlatform) async throws {
        try await Self.withPhone(Setup(platform: platform)) { phone, _, backend, clock in
            try await phone.launch()
            try await Self.withTokens(phone)
            let event = { (text: String) in
                #"{"to":"u1","type":"Message.Text","from":{"id":"agent-7","name":"Dana"},"text":"\#(text)"}"#
            }
            let _: ChatEventReceipt = try await backend.request(
                .POST,
                "/v1/chats/chat-9/events",
                event("hello"),
                expect: 202
            )
            try await phone.open(conversation: "chat-9")
            #expect(phone.appMessages.map(\.text) == ["hello"])
            try await phone.terminate()
            #expect(phone.life == .notRunning)
            #expect(phone.session == nil)
            let reply: ChatEventReceipt = try await backend.request(
                .POST,
                "/v1/chats/chat-9/events",
                event("your order shipped"),
                expect: 202
            )
            #expect(reply.scheduled.count == 1)
            clock.advance(by: .seconds(30))
            try await phone.wait("the chat's push") { $0.notifications.count == 1 }
            #expect(phone.life == .notRunning)
            let shown = try #require(phone.notifications.first)
            #expect(shown.body.contains("your order shipped"))

            try await phone.tap(shown)
            #expect(phone.life == .foreground)
            #expect(phone.session?.isStarted == true)
            #expect(phone.appMessages.map(\.text) == ["hello", "your order shipped"])
            let steps = phone.timeline.all.map(\.step)
            let launched = try #require(steps.lastIndex(of: "app launched"))
            let connected = try #require(steps.lastIndex(of: "chat connected"))
            let resynced = try #require(steps.lastIndex(of: "conversation resynced"))
            #expect(launched < connected && connected < resynced)
            // Back in the chat: the agent's next line is not pushed.
            let after: ChatEventReceipt = try await backend.request(
                .POST,
                "/v1/chats/chat-9/events",
                event("anything else?"),
                expect: 202
            )
            #expect(after.pushes.isEmpty && after.scheduled.isEmpty)
            #expect(phone.diagnostics.isEmpty)
        }
    }

    @Test("in the chat, the agent's lines arrive live; a gap in the positions (a typing notice) makes the app resync")
    func chatEventsLive() async throws {
        try await Self.withPhone { phone, _, backend, _ in
            try await phone.launch(showing: "chat-9")
            try await Self.withTokens(phone)
            try await Simulation.waitForLive(phone, activeIn: "chat-9")
            let event = { (type: String, text: String?) in
                #"{"to":"u1","type":"\#(type)","from":{"id":"agent-7","name":"Dana"}"#
                    + (text.map { #","text":"\#($0)""# } ?? "") + "}"
            }
            let first: ChatEventReceipt = try await backend.request(
                .POST,
                "/v1/chats/chat-9/events",
                event("Message.Text", "hello"),
                expect: 202
            )
            #expect(first.position == 1 && first.pushes.isEmpty && first.scheduled.isEmpty)
            try await phone.wait("the line shown live") { $0.appMessages.contains { $0.text == "hello" } }
            #expect(phone.appMessages.map(\.source) == [.live])
            #expect(!phone.timeline.all.contains { $0.step == "transcript gap" })

            // The typing notice (position 2) is not sent live: the next line comes after a gap.
            let _: ChatEventReceipt = try await backend.request(
                .POST,
                "/v1/chats/chat-9/events",
                event("Notice.TypingStarted", nil),
                expect: 202
            )
            let third: ChatEventReceipt = try await backend.request(
                .POST,
                "/v1/chats/chat-9/events",
                event("Message.Text", "your order shipped"),
                expect: 202
            )
            #expect(third.position == 3)
            try await phone.wait("the resync after the gap") {
                $0.appMessages.contains { $0.text == "your order shipped" }
            }
            let steps = phone.timeline.all.map(\.step)
            let gap = try #require(steps.lastIndex(of: "transcript gap"))
            let resynced = try #require(steps.lastIndex(of: "conversation resynced"))
            #expect(gap < resynced)
            #expect(
                phone.timeline.all.last { $0.step == "conversation resynced" }?.detail?.contains("after=1: 2 event(s)")
                    == true
            )
            #expect(phone.appMessages.map(\.text) == ["hello", "Notice.TypingStarted", "your order shipped"])
            #expect(phone.appMessages.last?.source == .transcript)
            // Contiguous again: shown live, no resync.
            let _: ChatEventReceipt = try await backend.request(
                .POST,
                "/v1/chats/chat-9/events",
                event("Message.Text", "anything else?"),
                expect: 202
            )
            try await phone.wait("the next line live") { $0.appMessages.count == 4 }
            #expect(phone.appMessages.last?.source == .live && phone.appMessages.last?.id == "position 4")
            #expect(phone.timeline.all.filter { $0.step == "conversation resynced" }.count == 2)
            #expect(phone.notifications.isEmpty && phone.diagnostics.isEmpty)
        }
    }

    /// The emulator's side of a denied permission; the relay's answer is checked by
    /// `permissionReachesRelay`.
    @Test("notifications denied: nothing shown, \"Push service not available\", denied sent to the relay")
    func permissionDenied() async throws {
        try await Self.withPhone(Setup(permission: .denied)) { phone, _, backend, _ in
            try await phone.launch()
            try await Self.withTokens(phone)
            #expect(phone.permissionReports == [.denied])
            #expect(!phone.pushAvailable)
            let steps = phone.timeline.all.map(\.step)
            #expect(steps.contains("Push service not available"))
            #expect(!steps.contains("push service available"))
            let receipt = try await backend.post("/v1/messages", Self.message("c1", "unseen"))
            if !receipt.pushes.isEmpty {
                // A relay that still pushes: the system withholds it.
                try await phone.wait("the push withheld") { phone in
                    phone.timeline.all.contains { $0.step == "notification not shown" }
                }
            }
            #expect(phone.notifications.isEmpty)
            // Allowed again: reported, and the next push is shown.
            try await phone.setNotificationPermission(.granted)
            #expect(phone.permissionReports == [.denied, .granted])
            #expect(phone.pushAvailable)
            #expect(phone.timeline.all.last { $0.step == "push service available" }?.detail == "notifications allowed")
            let shown = try await backend.post("/v1/messages", Self.message("c1", "seen"))
            #expect(shown.pushes.count == 1)
            try await phone.wait("the notification") { $0.notifications.count == 1 }
        }
    }

    @Test("the relay takes the permission report (PUT /v1/devices/{id}/notifications) and withholds alerts meanwhile")
    func permissionReachesRelay() async throws {
        try await Self.withPhone(Setup(permission: .denied)) { phone, _, backend, _ in
            try await phone.launch()
            try await Self.withTokens(phone)
            #expect(phone.timeline.all.contains { $0.step == "notifications denied reported" })
            #expect(try await Self.devices(backend).devices.map(\.notifications) == [.denied])
            let withheld = try await backend.post("/v1/messages", Self.message("c1", "not shown"))
            #expect(withheld.pushes.isEmpty)
            #expect(withheld.skipped.map(\.reason) == ["notifications_denied"])

            try await phone.setNotificationPermission(.granted)
            #expect(phone.timeline.all.contains { $0.step == "notifications granted reported" })
            #expect(try await Self.devices(backend).devices.map(\.notifications) == [.granted])
            let sent = try await backend.post("/v1/messages", Self.message("c1", "shown"))
            #expect(sent.pushes.count == 1 && sent.skipped.isEmpty)
            #expect(phone.diagnostics.isEmpty)
        }
    }

    @Test("switched off and on: the app launches again, back in the chat it left")
    func relaunchAfterShutdown() async throws {
        try await Self.withPhone { phone, _, _, _ in
            try await phone.launch(showing: "c1")
            try await Self.withTokens(phone)
            try await phone.enterBackground()
            phone.shutdown()
            #expect(phone.life == .notRunning)
            try await phone.launch()
            #expect(phone.life == .foreground)
            #expect(phone.session?.isStarted == true)
            #expect(phone.timeline.all.filter { $0.step == "chat connected" }.count == 1)
            #expect(phone.diagnostics.isEmpty)
        }
    }

    @Test("logout: the relay forgets the device, the app its keys and credential; pushes stop")
    func logout() async throws {
        try await Self.withPhone { phone, _, backend, _ in
            try await phone.launch(showing: "c1")
            try await Self.withTokens(phone)
            try await phone.logout()
            #expect(phone.life == .loggedOut)
            #expect(phone.store.registration() == nil && phone.store.credential() == nil)
            #expect(phone.store.keyIDs().isEmpty)
            #expect(try await Self.devices(backend).devices.isEmpty)
            let receipt = try await backend.post("/v1/messages", Self.message("c1", "nobody home"))
            #expect(receipt.pushes.isEmpty && receipt.skipped.isEmpty)
            #expect(phone.diagnostics.isEmpty)
        }
    }

    @Test(
        "the build's APNs environment: sandbox tokens of it, named at activation",
        arguments: APNsEnvironment.allCases
    )
    func environment(_ environment: APNsEnvironment) async throws {
        try await Self.withPhone(Setup(environment: environment)) { phone, _, backend, _ in
            try await phone.launch()
            try await Self.withTokens(phone)
            let device = try #require(phone.store.registration()?.deviceID)
            let view: DeviceView = try await backend.request(.GET, "/v1/devices/\(device)", nil, expect: 200)
            #expect(view.apnsEnvironment == environment)
        }
    }

    @Test("herald device refuses a life, permission, environment or logout count it does not know")
    func deviceOptions() throws {
        for arguments in [
            ["--user", "a", "--life", "asleep"], ["--user", "a", "--notifications", "maybe"],
            ["--user", "a", "--environment", "staging"],
            ["--user", "a", "--platform", "android", "--environment", "production"],
            ["--user", "a", "--logout-after", "0"],
        ] {
            #expect(throws: (any Error).self) { try DeviceCommand.parse(arguments) }
        }
        let parsed = try DeviceCommand.parse([
            "--user", "a", "--life", "terminated", "--conversation", "c1", "--notifications", "denied", "--tap",
            "--logout-after", "2", "--environment", "production",
        ])
        #expect(parsed.life == "terminated" && parsed.tap && parsed.logoutAfter == 2)
    }
}
