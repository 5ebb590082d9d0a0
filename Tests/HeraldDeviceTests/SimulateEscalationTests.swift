import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldDevice
import HeraldDomain
import HeraldSimulation
import Logging
import Testing

@testable import HeraldCommands

/// `herald simulate escalation`: in-process on iOS and Android, and against a running relay (a
/// stack of its own the command reaches by URL) where it succeeds, fails, or is refused.
@Suite("Simulated escalation", .timeLimit(.minutes(3)))
struct SimulateEscalationTests {
    @Test(
        "the phone is off: two simulated minutes unseen, the reply goes to the tablet at priority 10, push.unseen",
        arguments: [false, true]
    )
    func inProcess(android: Bool) async throws {
        let events = try await SimulateLivesTests.play(["escalation"] + (android ? ["--android"] : []))
        let put = try #require(events.first { $0.step.hasPrefix("PUT /v1/apps/com.example.herald → 200") })
        #expect(put.detail?.contains("a message not shown in 120 s → other_devices") == true)
        let steps = events.map(\.step)
        let off = try #require(steps.firstIndex(of: "phone switched off"))
        let post = try #require(steps.firstIndex { $0.hasPrefix("POST /v1/messages → 202") })
        let tabletLaunch = try #require(events.firstIndex { $0.step == "app launched" && $0.to == "app · tablet" })
        #expect(off < post && post < tabletLaunch)

        let delivered = android ? "data message delivered" : "push delivered"
        let toTablet = try #require(events.firstIndex { $0.step == delivered && $0.to == "app · tablet" })
        #expect(events[toTablet].priority == (android ? .fcm("HIGH") : .apns(10)))
        // The deadline's two minutes, on the simulation's clock (the relay shares it).
        #expect(events[toTablet].elapsedMs - events[post].elapsedMs >= 120_000)
        let accepted = try #require(events.last { $0.step.hasPrefix("push accepted by") })
        #expect(accepted.priority == (android ? .fcm("HIGH") : .apns(10)))

        let shown = events.filter { $0.step == "notification shown" }
        #expect(
            shown.count == 2 && shown.allSatisfy { $0.userSees == "Dana (Acme support): \(Simulation.unseenReply)" }
        )
        #expect(shown.first?.from.hasSuffix("· tablet") == true)
        #expect(events.contains { $0.step == "receipt sent" && $0.detail == "shown" && $0.from == "app · tablet" })

        let unseen = try #require(events.firstIndex { $0.step == "webhook event push.unseen (delivered)" })
        #expect(events[unseen].detail?.contains("action other_devices") == true)
        #expect(events[unseen].from == "relay" && events[unseen].to == "backend")
        #expect(steps.contains("deadline passed unseen"))
        // The phone, back online, shows the original after the tablet did.
        let toPhone = try #require(events.firstIndex { $0.step == delivered && $0.to == "app" })
        #expect(toTablet < toPhone && events[toPhone].priority == (android ? .fcm("HIGH") : .apns(5)))
    }

    /// Runs `body` with a relay and sandbox of their own on `clock`, the app with no webhook, and
    /// the API key in a file: what `--relay` reaches.
    static func withRunningRelay(
        clock: TestClock = TestClock(),
        webhook: Bool = false,
        _ body: (SimulationEndpoints, _ keyFile: String) async throws -> Void
    ) async throws {
        var logger = Logger(label: "test.escalation")
        logger.logLevel = .critical
        try await SimulationStack.with(clock: clock, logger: logger, webhook: webhook) { relay in
            let keyFile = NSTemporaryDirectory() + "herald-key-\(UUID().uuidString)"
            try relay.apiKey.write(toFile: keyFile, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: keyFile) }
            try await body(relay, keyFile)
        }
    }

    static func arguments(_ relay: SimulationEndpoints, _ keyFile: String) -> [String] {
        [
            "escalation", "--relay", relay.relayURL, "--sandbox", relay.sandboxURL, "--api-key-file", keyFile,
            "--bundle", relay.bundleID, "--after", "1",
        ]
    }

    /// The app as the relay shows it now.
    static func app(_ relay: SimulationEndpoints) async throws -> [String: Any] {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { _ = http.shutdown() }
        let backend = SimulatedBackend(
            http: http,
            relayURL: relay.relayURL,
            apiKey: relay.apiKey,
            timeline: Timeline(clock: WallClock())
        )
        return try await backend.app(relay.bundleID)
    }

    @Test("against a running relay: the rule's second passes in real time; the app is put back as it was")
    func runningRelay() async throws {
        try await Self.withRunningRelay { relay, keyFile in
            let before = try await Self.app(relay)
            let events = try await SimulateLivesTests.play(Self.arguments(relay, keyFile))
            let toTablet = try #require(events.first { $0.step == "push delivered" && $0.to == "app · tablet" })
            #expect(toTablet.priority == .apns(10))
            #expect(events.contains { $0.step == "webhook event push.unseen (delivered)" })
            #expect(events.filter { $0.step == "notification shown" }.count == 2)
            let after = try await Self.app(relay)
            #expect(after["deadlines"] == nil && after["webhook"] == nil)
            #expect(after["team_id"] as? String == before["team_id"] as? String)
        }
    }

    /// Runs the command against a running relay (on `clock`, its app with a webhook or not) and
    /// expects it to fail with `message`, leaving the app's deadlines as they were (none).
    static func expectFailure(_ message: String, clock: TestClock = TestClock(), webhook: Bool = false) async throws {
        try await withRunningRelay(clock: clock, webhook: webhook) { relay, keyFile in
            await #expect {
                try await SimulateLivesTests.play(arguments(relay, keyFile))
            } throws: { error in
                "\(error)".contains(message)
            }
            let app = try await Self.app(relay)
            #expect(app["deadlines"] == nil)
        }
    }

    @Test("a relay whose deadline never comes: the command fails, saying the tablet got nothing; the app is put back")
    func notEscalated() async throws {
        // The relay's clock stands still: the deadline is never due.
        try await Self.expectFailure(
            "the escalation did not reach the tablet",
            clock: TestClock(frozenAt: WallClock().now())
        )
    }

    @Test("a running relay's app with a webhook of its own is refused: its secret could not be put back")
    func webhookRefused() async throws {
        try await Self.expectFailure("has a webhook at the relay", webhook: true)
    }
}
