import ArgumentParser
import Foundation
import HeraldDevice
import HeraldSimulation
import Synchronization
import Testing

@testable import HeraldCommands

/// The timeline's order is causal: whatever clock timed a step, and whenever it was recorded, a
/// push is asked for before it is accepted, accepted before it is delivered, delivered before it
/// is shown.
@Suite("Timeline order and page", .timeLimit(.minutes(3)))
struct TimelineOrderTests {
    /// Where the test's clock starts (milliseconds since the epoch).
    static let start: Int64 = 1_000_000

    @Test("a step reported late, on another clock, is placed before the delivery it caused")
    func reportedStepPlacedByCause() {
        let clock = TestClock(frozenAt: Self.start)
        let timeline = Timeline(clock: clock)
        clock.set(Self.start + 100)
        timeline.record("backend", "relay", "POST /v1/messages → 202", subject: "m1", stage: .requested, at: 1_000_050)
        clock.set(Self.start + 120)
        timeline.record("apns", "app", "push delivered", subject: "m1", stage: .delivered)
        clock.set(Self.start + 125)
        timeline.record("app", "app", "something else")
        timeline.record("nse", "notification-center", "notification shown", subject: "m1", stage: .shown)
        // The relay recorded APNs's answer after the phone showed the push.
        clock.set(Self.start + 140)
        timeline.record(
            "relay",
            "apns",
            "push accepted by APNs",
            subject: "m1",
            stage: .accepted,
            reportedAt: 1_000_130
        )
        // A running relay's clock, ten minutes behind the simulated one: before the request.
        timeline.record(
            "relay",
            "apns",
            "push accepted by APNs",
            subject: "m2",
            stage: .accepted,
            reportedAt: 1_000_010
        )
        clock.set(Self.start + 600_000)
        timeline.record("backend", "relay", "POST /v1/messages → 202", subject: "m2", stage: .requested)
        timeline.record("fcm", "app", "data message delivered", subject: "m2", stage: .delivered)

        let events = timeline.all
        #expect(
            events.map(\.step) == [
                "POST /v1/messages → 202", "push accepted by APNs", "push delivered", "something else",
                "notification shown", "POST /v1/messages → 202", "push accepted by APNs", "data message delivered",
            ]
        )
        #expect(events.map(\.elapsedMs) == [50, 120, 120, 125, 125, 600_000, 600_000, 600_000])
        // The report itself is kept.
        #expect(events.compactMap(\.reportedMs) == [130, 10])
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.elapsedMs <= $1.elapsedMs })
    }

    /// Every `herald simulate` scenario, by its subcommand's name: a new one is checked too.
    static let scenarios = SimulateCommand.configuration.subcommands.compactMap { $0.configuration.commandName }

    @Test(
        "every simulation: each push asked for, accepted, delivered, then shown; a page with one title, an axis, no blank cell",
        arguments: scenarios
    )
    func simulation(_ scenario: String) async throws {
        let base = NSTemporaryDirectory() + "herald-\(scenario)-\(UUID().uuidString)"
        defer {
            try? FileManager.default.removeItem(atPath: base + ".json")
            try? FileManager.default.removeItem(atPath: base + ".html")
        }
        let parsed = try SimulateCommand.parseAsRoot([
            scenario, "--json", base + ".json", "--html", base + ".html", "--quiet",
        ])
        var command = try #require(parsed as? any AsyncParsableCommand)
        try await command.run()
        let events = try JSONDecoder().decode(
            [TimelineEvent].self,
            from: Data(contentsOf: URL(filePath: base + ".json"))
        )

        #expect(zip(events, events.dropFirst()).allSatisfy { $0.elapsedMs <= $1.elapsedMs })
        // By the steps' names, not their stages: the chain each push must follow.
        let chain: [(String, (String) -> Bool)] = [
            ("asked for", { $0.hasPrefix("POST /v1/") }),
            ("accepted by the network", { $0.hasPrefix("push accepted by") }),
            ("delivered", { $0 == "push delivered" || $0 == "data message delivered" }),
            ("shown", { $0 == "notification shown" || $0 == "phone rings" }),
        ]
        let subjects = Set(events.filter { $0.step.hasPrefix("POST /v1/") }.compactMap(\.subject))
        #expect(!subjects.isEmpty)
        for subject in subjects.sorted() {
            var last = -1
            for (link, matches) in chain {
                let positions = events.indices.filter { events[$0].subject == subject && matches(events[$0].step) }
                guard let first = positions.first, let final = positions.last else {
                    Issue.record("\(scenario): \(subject) was never \(link)")
                    break
                }
                #expect(first > last, "\(scenario): \(subject) \(link) before the step that caused it")
                last = final
            }
        }
        // Every notification shown says what the user saw.
        let shown = events.filter { $0.step == "notification shown" || $0.step == "phone rings" }
        #expect(!shown.isEmpty && shown.allSatisfy { $0.userSees?.contains("Dana") == true })

        let page = try String(contentsOfFile: base + ".html", encoding: .utf8)
        #expect(page.components(separatedBy: "<h1").count == 2)
        #expect(!page.contains("<h2"))
        #expect(page.contains("class=\"axis\""))
        #expect(!page.contains("<td></td>") && !page.contains("<td class=\"none\"></td>"))
        #expect(page.components(separatedBy: "class=\"sees\"").count - 1 >= shown.count)
        // Self-contained: nothing to fetch.
        #expect(!page.contains("<link") && !page.contains("src=") && !page.contains("@import"))
        // The simulated minutes between the messages: a labelled gap for each wait.
        if events.filter({ $0.step.hasPrefix("POST /v1/messages") }).count == 3 {
            #expect(page.components(separatedBy: "<g class=\"gap\"").count - 1 >= 2)
            #expect(page.contains("4 min") && page.contains("6 min"))
            let priority = ["android": "priority HIGH", "web": "priority normal"][scenario] ?? "priority 5"
            #expect(page.contains(priority))
        }
    }
}
