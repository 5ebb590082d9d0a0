import Foundation
import HeraldConsoleCore
import HeraldPush
import HeraldRelayHTTP
import HeraldStore
import Hummingbird
import NIOCore

extension Console {
    struct OverviewView {
        var queued: Int
        var sending: Int
        var oldest: String
        var total: Int
        var shown: String
        var toAccepted: String
        var toShown: String
        var outcomeChart: String
        var networkChart: String
        var outcomes: [SVGChart.Series]
        var networks: [SVGChart.Series]
        var answers: [AnswerRow]
        var sampled: Int
        var readAt: String
    }

    struct AnswerRow {
        var network: String
        var state: String
        var reason: String
        var count: Int
    }

    /// The latest finished pushes of the hour that the latencies are read from: enough for a p99
    /// (ten beyond it), few enough that a page reads them in milliseconds on either engine.
    static let overviewSamples = 1_000

    func addOverview(to group: RouterGroup<RelayRequestContext>) {
        page(group, "overview") { _, _, signedIn in
            render("Overview", "overview", try await overview(), signedIn, current: "/console/overview", refresh: 30)
        }
        data(group, "overview/figures") { _, _, _ in
            fragment("overview-figures", try await overview())
        }
    }

    func overview() async throws -> OverviewView {
        let now = clock.now()
        let counts = try await store.queueCounts()
        let since = (now / 60_000 - 59) * 60_000
        let activity = try await store.pushActivity(since: since, sampleLimit: Self.overviewSamples)
        let figures = ConsoleOverview(activity: activity, now: now)
        let labels = figures.labels
        func percentiles(_ value: ConsoleOverview.Percentiles?) -> String {
            value.map { "\(Self.span($0.p50)) / \(Self.span($0.p99))" } ?? "none yet"
        }
        return OverviewView(
            queued: counts[.queued],
            sending: counts[.sending],
            oldest: counts.oldestQueuedAt.map { Self.span(max(0, now - $0)) } ?? "none",
            total: figures.total,
            shown: figures.shownRatio.map { "\(Int(($0 * 100).rounded())) %" } ?? "none yet",
            toAccepted: percentiles(figures.toAccepted),
            toShown: percentiles(figures.toShown),
            outcomeChart: SVGChart.stackedBars(
                SVGChart.Frame(title: "Pushes per minute by outcome, last hour", labels: labels, unit: "pushes"),
                figures.byOutcome
            ),
            networkChart: SVGChart.stackedBars(
                SVGChart.Frame(title: "Pushes per minute by network, last hour", labels: labels, unit: "pushes"),
                figures.byNetwork
            ),
            outcomes: figures.byOutcome,
            networks: figures.byNetwork,
            answers: figures.answers.prefix(20).map {
                AnswerRow(
                    network: PushRoad.name($0.network),
                    state: $0.state.rawValue,
                    reason: $0.reason ?? "",
                    count: $0.count
                )
            },
            sampled: figures.sampled,
            readAt: Self.time(now)
        )
    }

    // MARK: Live

    struct PushRow {
        var at: String
        var app: String
        var user: String?
        var kind: String
        var network: String
        var state: String
        var stage: String
        var pushID: String

        init(_ push: PushSummary) {
            at = Console.time(push.updatedAt)
            app = push.appID ?? ""
            user = push.userID
            kind = push.kind.rawValue
            network = push.network.rawValue
            state = push.state.rawValue + (push.lastReason.map { " (\($0))" } ?? "")
            stage = push.deviceStage?.rawValue ?? ""
            pushID = push.pushID
        }
    }

    func addLive(to group: RouterGroup<RelayRequestContext>) {
        page(group, "live") { _, _, signedIn in
            let recent = try await store.pushes(matching: PushQuery(limit: 50))
            return render(
                "Live",
                "live",
                ["pushes": recent.pushes.map(PushRow.init)],
                signedIn,
                current: "/console/live"
            )
        }
        data(group, "live/events") { request, _, signedIn in
            let stream = live.subscribe()
            let sessions = self.sessions
            let clock = self.clock
            return ConsoleHTTP.eventStream { writer in
                try await writer.write(ByteBuffer(string: "retry: 3000\n\n"))
                var checked = clock.now()
                for await frame in stream {
                    // The session is checked again every few seconds: a stream ends with its
                    // session's expiry or sign-out, wherever that happened.
                    if clock.now() - checked > 5_000 || clock.now() >= signedIn.expiresAt {
                        guard (try? await sessions.signedIn(request)) != nil else { break }
                        checked = clock.now()
                    }
                    try await writer.write(ByteBuffer(string: frame.text))
                }
            }
        }
    }
}
