import ArgumentParser
import Foundation
import HeraldDevice
import Testing

@testable import HeraldCommands

/// `herald simulate dual-channel` and `gms-chat`, on iOS and Android, through their commands.
@Suite("Simulated app lives", .timeLimit(.minutes(3)))
struct SimulateLivesTests {
    /// Runs `herald simulate <arguments>` and returns its timeline.
    static func play(_ arguments: [String]) async throws -> [TimelineEvent] {
        let path = NSTemporaryDirectory() + "herald-lives-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let parsed = try SimulateCommand.parseAsRoot(arguments + ["--json", path, "--quiet"])
        var command = try #require(parsed as? any AsyncParsableCommand)
        try await command.run()
        return try JSONDecoder().decode([TimelineEvent].self, from: Data(contentsOf: URL(filePath: path)))
    }

    static func count(_ events: [TimelineEvent], _ step: String) -> Int {
        events.count { $0.step == step }
    }

    @Test(
        "dual channel: live while open, pushed in the background and when closed, live once reopened",
        arguments: [false, true]
    )
    func dualChannel(android: Bool) async throws {
        let events = try await Self.play(["dual-channel"] + (android ? ["--android"] : []))
        let steps = events.map(\.step)
        #expect(Self.count(events, "message received live") == 2)
        #expect(Self.count(events, "message acknowledged") == 2)
        #expect(Self.count(events, "notification shown") == 2)
        #expect(Self.count(events, android ? "data message delivered" : "push delivered") == 2)
        // Heartbeats: at the open, 30 s later, and again once the tap brought the app back.
        #expect(events.count { $0.step == "presence: active" } >= 3)
        let live = steps.indices.filter { steps[$0] == "message received live" }
        let shown = steps.indices.filter { steps[$0] == "notification shown" }
        let terminated = try #require(steps.firstIndex(of: "app terminated"))
        let tapped = try #require(steps.firstIndex(of: "notification tapped"))
        #expect(live[0] < shown[0] && shown[0] < terminated && terminated < shown[1])
        #expect(shown[1] < tapped && tapped < live[1])
        // The second push was shown while the app was not running: nothing launched in between.
        #expect(!steps[terminated..<shown[1]].contains("app launched"))
        #expect(steps[tapped...].contains("app launched") && steps[tapped...].contains("conversation resynced"))
    }

    @Test(
        "GMS chat: disconnect, typing filtered, one delayed push for two lines, one at once, a tap reconnects",
        arguments: [false, true]
    )
    func gmsChat(android: Bool) async throws {
        let events = try await Self.play(["gms-chat"] + (android ? ["--android"] : []))
        let steps = events.map(\.step)
        #expect(Self.count(events, "notification shown") == 2)
        let first = try #require(events.first { $0.step == "notification shown" })
        #expect(first.userSees?.contains("Your replacement ships today.") == true)
        #expect(first.userSees?.contains("The tracking number is in your account.") == true)
        // The sender is the notification's title, named once: not again before each line.
        #expect(
            first.userSees
                == "Dana (Acme support): Your replacement ships today.\nThe tracking number is in your account."
        )
        // The first push came 30 s after the first reply, the second at once.
        let disconnected = try #require(events.first { $0.step == "chat disconnected" })
        #expect(disconnected.detail?.contains("transcript position 1") == true)
        #expect(events.contains { $0.detail?.contains("Notice.TypingStarted at position 2: filtered") == true })
        let connected = try #require(events.first { $0.step == "chat connected" })
        #expect(connected.detail?.contains("4 event(s) since the disconnect") == true)
        let tapped = try #require(steps.firstIndex(of: "notification tapped"))
        #expect(steps[tapped...].contains("chat connected"))
        #expect(events.last { $0.step == "chat event posted" }?.detail?.hasSuffix("position 6: no push") == true)
        // Back in the chat, that reply came over the live channel, after the reconnect.
        #expect(Self.count(events, "chat event received live") == 1)
        let live = try #require(steps.firstIndex(of: "chat event received live"))
        #expect(steps[tapped..<live].contains("chat connected"))
        #expect(!steps[live...].contains("transcript gap"))
        #expect(
            events.last { $0.step == "shown in the conversation" }?.userSees
                == "Dana (Acme support): Glad I could help. Bye!"
        )
        #expect(events.last { $0.step == "shown in the conversation" }?.detail?.contains("live") == true)
    }
}
