import HeraldConsoleCore
import HeraldPush
import HeraldRelayAPI
import HeraldStore
import Testing

@Suite("The console's figures, charts and roads, without a server")
struct ConsoleFiguresTests {
    static let now: Int64 = 1_780_000_000_000

    static func count(
        _ minutesAgo: Int64,
        _ network: PushNetwork,
        _ state: PushState,
        _ reason: String?,
        _ count: Int
    )
        -> PushActivity.Count
    {
        PushActivity.Count(
            minute: now / 60_000 - minutesAgo,
            network: network,
            state: state,
            reason: reason,
            count: count
        )
    }

    @Test("The overview counts by minute, outcome and network, ranks the answers and takes percentiles")
    func overview() {
        let activity = PushActivity(
            counts: [
                Self.count(0, .apns, .delivered, nil, 7),
                Self.count(0, .fcm, .delivered, nil, 3),
                Self.count(5, .apns, .tokenDead, "BadDeviceToken", 2),
                Self.count(59, .fcm, .failed, "INVALID_ARGUMENT", 1),
                // Older than the hour: not counted.
                Self.count(60, .apns, .delivered, nil, 100),
            ],
            samples: (1...100).map { index in
                PushActivity.Sample(
                    network: .apns,
                    state: .delivered,
                    createdAt: Self.now - 10_000,
                    updatedAt: Self.now - 10_000 + Int64(index),
                    shownAt: index <= 80 ? Self.now - 10_000 + Int64(index) + 500 : nil
                )
            }
        )
        let overview = ConsoleOverview(activity: activity, now: Self.now)
        #expect(overview.minutes.count == 60)
        #expect(overview.total == 13)
        let delivered = overview.byOutcome.first { $0.name == "delivered" }
        #expect(delivered?.values.last == 10)
        #expect(delivered?.values.reduce(0, +) == 10)
        #expect(overview.byNetwork.first { $0.name == "fcm" }?.values.first == 1)
        #expect(overview.answers.first?.count == 7)
        #expect(overview.answers.map(\.reason).contains("BadDeviceToken"))
        #expect(overview.shownRatio == 0.8)
        #expect(overview.toAccepted?.p50 == 50)
        #expect(overview.toAccepted?.p99 == 99)
        #expect(overview.toShown?.p50 == 500)
        #expect(overview.labels.count == 60)
    }

    @Test("Nearest-rank percentiles", arguments: [([5], 5, 5), ([1, 2, 3, 4], 2, 4), (Array(1...1000), 500, 990)])
    func percentiles(values: [Int], p50: Int, p99: Int) throws {
        let result = try #require(ConsoleOverview.Percentiles(values.map(Int64.init)))
        #expect(result.p50 == Int64(p50))
        #expect(result.p99 == Int64(p99))
    }

    @Test("Stacked bars: one rect per non-zero value, a tooltip each, the series' classes, no inline style")
    func bars() {
        let frame = SVGChart.Frame(title: "Pushes <per> minute", labels: ["10:00", "10:01", "10:02"], unit: "pushes")
        let svg = SVGChart.stackedBars(
            frame,
            [
                SVGChart.Series(name: "delivered", cssClass: "s-delivered", values: [1, 0, 4]),
                SVGChart.Series(name: "failed", cssClass: "s-failed", values: [2, 0, 0]),
            ]
        )
        #expect(svg.components(separatedBy: "<rect").count - 1 == 3)
        #expect(svg.contains("10:02 delivered: 4 pushes"))
        #expect(svg.contains("class=\"s-failed\""))
        #expect(svg.contains("aria-label=\"Pushes &lt;per&gt; minute\""))
        #expect(!svg.contains("style="))
        // The axis tops out at a round number at or above the tallest bar (3 → 5).
        #expect(svg.contains(">5</text>"))
    }

    @Test("Lines break where a bucket has no value")
    func lines() {
        let frame = SVGChart.Frame(title: "p99", labels: ["a", "b", "c"], unit: "ms")
        let svg = SVGChart.lines(frame, [SVGChart.Series(name: "p99", cssClass: "p99", values: [10, .nan, 30])])
        #expect(svg.components(separatedBy: "<circle").count - 1 == 2)
        #expect(svg.components(separatedBy: " M").count + svg.components(separatedBy: "\"M").count - 2 == 2)
    }

    static func summary(
        _ id: String,
        _ state: PushState,
        stage: ReceiptStage? = nil,
        attempts: Int = 0,
        at: Int64
    )
        -> PushSummary
    {
        PushSummary(
            pushID: id,
            deviceID: "d1",
            userID: "u1",
            appID: "com.example",
            network: .apns,
            kind: .message,
            subjectID: "m1",
            state: state,
            attempts: attempts,
            lastReason: nil,
            apnsID: nil,
            createdAt: at,
            updatedAt: at,
            expiresAt: at + 1000,
            deviceStage: stage
        )
    }

    @Test("The live feed tells a push once when new and again only when it changes; it watches until shown")
    func liveFeed() {
        var tracker = LiveFeedTracker(watchFor: .seconds(60))
        let first = tracker.observe(
            [Self.summary("p1", .queued, at: 1), Self.summary("p2", .delivered, at: 2)],
            now: 10
        )
        #expect(first.map(\.pushID) == ["p1", "p2"])
        #expect(tracker.watched(now: 11).sorted() == ["p1", "p2"])
        #expect(tracker.observe([Self.summary("p1", .queued, at: 1)], now: 12).isEmpty)
        let changed = tracker.observe(
            [Self.summary("p1", .delivered, attempts: 1, at: 1), Self.summary("p2", .delivered, stage: .shown, at: 2)],
            now: 13
        )
        #expect(changed.map(\.state) == [.delivered, .delivered])
        #expect(changed.last?.stage == .shown)
        // p2 is done (shown); p1 is delivered and waits for its receipt.
        #expect(tracker.watched(now: 14) == ["p1"])
        // Read again by a later poll, a done push tells nothing new.
        #expect(tracker.observe([Self.summary("p2", .delivered, stage: .shown, at: 2)], now: 15).isEmpty)
        // Past the watch, forgotten.
        #expect(tracker.watched(now: 70_000).isEmpty)
    }

    @Test("A push's road: accepted, sealed sizes, a retry with its reason, acceptance, receipts, in time order")
    func road() {
        let status = PushStatusView(
            pushID: "p1",
            deviceID: "d1",
            kind: .message,
            state: .delivered,
            reason: nil,
            attempts: 2,
            apnsID: "A1B2",
            priority: 5,
            createdAt: 1000,
            updatedAt: 3000,
            expiresAt: 9000,
            history: [
                PushStatusView.Event(at: 1000, state: .queued, reason: nil),
                PushStatusView.Event(at: 2000, state: .queued, reason: "TooManyRequests"),
                PushStatusView.Event(at: 3000, state: .delivered, reason: nil),
            ],
            receipts: [PushReceipt(pushID: "p1", stage: .shown, deviceTime: 3400, receivedAt: 3500, failure: nil)]
        )
        let road = PushRoad(status: status, entry: nil, webhooks: [])
        #expect(
            road.steps.map(\.title) == [
                "accepted and queued", "attempt 1: back to the queue",
                "accepted by the push network after 2 attempt(s)",
                "receipt: shown",
            ]
        )
        #expect(road.steps[1].detail == "reason: TooManyRequests")
        #expect(road.steps[2].detail == "apns-id A1B2")
    }

    @Test("What a payload's facts tell: headers and sizes, never the body")
    func facts() {
        let payload = Push.Payload.apns(
            APNsPayload(
                topic: "com.example",
                type: .alert,
                priority: .immediate,
                apnsID: "X",
                json: #"{"aps":{"alert":"SECRET-TEXT"}}"#
            )
        )
        let facts = PushRoad.facts(payload, collapsed: true)
        #expect(facts.contains("apns-push-type alert"))
        #expect(facts.contains("body 31 bytes"))
        #expect(!facts.contains("SECRET"))
    }

    @Test("A sequence diagram: a lane per part in order of appearance, an arrow per step, text escaped")
    func sequence() {
        let steps = [
            SimulationStep(elapsedMs: 0, from: "backend", to: "relay", step: "POST /v1/messages"),
            SimulationStep(elapsedMs: 1500, from: "relay", to: "apns", step: "push <alert>", detail: "priority 5"),
            SimulationStep(elapsedMs: 61_000, from: "nse", to: "nse", step: "opened"),
        ]
        #expect(SequenceDiagram.lanes(steps) == ["backend", "relay", "apns", "nse"])
        let svg = SequenceDiagram.svg(steps, title: "t")
        #expect(svg.components(separatedBy: "class=\"arrow").count - 1 == 3)
        #expect(svg.contains("push &lt;alert&gt;"))
        #expect(svg.contains("1 min 1 s"))
    }
}
