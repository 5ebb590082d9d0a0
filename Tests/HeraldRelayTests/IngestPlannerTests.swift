import HeraldPush
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldRelay

/// Where a message or a call goes on each device, as data: no store, no channel, no sealing.
@Suite("Ingest planner")
struct IngestPlannerTests {
    static let planner = IngestPlanner(configuration: RelayConfiguration())
    static let now: Int64 = 10_000

    /// A presence of `device` at `now`: active in `conversation` until `expires`.
    static func presence(_ device: String, in conversation: String = "c1", expires: Int64 = 20_000) -> PresenceRecord {
        PresenceRecord(
            deviceID: device,
            userID: "u",
            conversation: conversation,
            state: .active,
            updatedAt: now,
            expiresAt: expires
        )
    }

    static func situation(
        here: Set<String> = [],
        elsewhere: [String: String] = [:],
        node: String? = nil,
        apps: [AppRecord] = [StoreFixtures.app()]
    ) -> IngestPlanner.MessageSituation {
        IngestPlanner.MessageSituation(
            messageID: "m1",
            conversation: "c1",
            now: now,
            onScreenHere: here,
            elsewhere: elsewhere,
            nodeID: node,
            ackDeadline: now + 5_000,
            apps: Dictionary(uniqueKeysWithValues: apps.map { ($0.id, $0) })
        )
    }

    static func handover(_ device: String, to node: String) -> IngestPlanner.Route {
        .handover(LiveHandover(messageID: "m1", deviceID: device, nodeID: node, deadline: now + 5_000))
    }

    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var recipients: [Recipient]
        var situation: IngestPlanner.MessageSituation
        var routes: [IngestPlanner.Route]
        var description: String { name }
    }

    static let cases: [Case] = {
        let app = StoreFixtures.app()
        var perUser = StoreFixtures.app()
        perUser.presencePolicy = .perUser
        let one = Recipient(device: StoreFixtures.device("d1"), presence: nil)
        let two = Recipient(device: StoreFixtures.device("d2"), presence: nil)
        var tokenless = StoreFixtures.device("d3")
        tokenless.messagingToken = nil
        var dead = tokenless
        dead.tokenDeadReason = "Unregistered"
        var android = StoreFixtures.androidDevice("d4", token: String(repeating: "f", count: 20))
        android.appID = "com.example.other"
        return [
            Case(name: "a device with a token", recipients: [one], situation: situation(), routes: [.push(app)]),
            Case(
                name: "on screen here, one node: live",
                recipients: [one],
                situation: situation(here: ["d1"]),
                routes: [.live]
            ),
            Case(
                name: "on screen here, several nodes: handed to this node",
                recipients: [one],
                situation: situation(here: ["d1"], node: "n1"),
                routes: [handover("d1", to: "n1")]
            ),
            Case(
                name: "on screen on another node: handed to it",
                recipients: [one, two],
                situation: situation(elsewhere: ["d2": "n2"], node: "n1"),
                routes: [.push(app), handover("d2", to: "n2")]
            ),
            Case(
                name: "no token, and a dead one",
                recipients: [Recipient(device: tokenless, presence: nil), Recipient(device: dead, presence: nil)],
                situation: situation(),
                routes: [.skip("no_token"), .skip("token_dead: Unregistered")]
            ),
            Case(
                name: "active in the conversation: that device only (per device)",
                recipients: [Recipient(device: one.device, presence: presence("d1")), two],
                situation: situation(),
                routes: [.skip("active_in_conversation"), .push(app)]
            ),
            Case(
                name: "active in the conversation: every device of a per-user app",
                recipients: [Recipient(device: one.device, presence: presence("d1")), two],
                situation: situation(apps: [perUser]),
                routes: [.skip("active_in_conversation"), .skip("user_active_in_conversation")]
            ),
            Case(
                name: "active elsewhere, or no longer: pushed",
                recipients: [
                    Recipient(device: one.device, presence: presence("d1", in: "c2")),
                    Recipient(device: two.device, presence: presence("d2", expires: now)),
                ],
                situation: situation(apps: [perUser]),
                routes: [.push(perUser), .push(perUser)]
            ),
            Case(
                name: "an app the relay does not know",
                recipients: [one, Recipient(device: android, presence: nil)],
                situation: situation(),
                routes: [.push(app), .skip("app_not_registered")]
            ),
        ]
    }()

    @Test("a message's route on each device", arguments: cases)
    func message(_ test: Case) {
        #expect(Self.planner.messageRoutes(test.recipients, test.situation) == test.routes)
    }

    @Test("a platform the provider cannot push to is skipped, for messages and calls")
    func platformNotConfigured() {
        var configuration = RelayConfiguration()
        configuration.platforms = [.android]
        let planner = IngestPlanner(configuration: configuration)
        let device = StoreFixtures.device("d1")
        let apps = [StoreFixtures.appID: StoreFixtures.app()]
        #expect(
            planner.messageRoutes([Recipient(device: device, presence: nil)], Self.situation())
                == [.skip("platform_not_configured")]
        )
        #expect(planner.callRoutes([device], apps: apps) == [.skip("platform_not_configured")])
    }

    @Test("a call rings every device with its token, whatever the presence; iOS needs a VoIP token")
    func call() {
        let app = StoreFixtures.app()
        var noVoIP = StoreFixtures.device("d2")
        noVoIP.voipToken = nil
        let android = StoreFixtures.androidDevice("d3", token: String(repeating: "f", count: 20))
        var unknown = StoreFixtures.device("d4")
        unknown.appID = "com.example.other"
        let routes = Self.planner.callRoutes(
            [StoreFixtures.device("d1"), noVoIP, android, unknown],
            apps: [app.id: app]
        )
        #expect(routes == [.push(app), .skip("no_voip_token"), .push(app), .skip("app_not_registered")])
    }

    /// An ingest's commit, by what it writes: a change's effects when applied, and what goes
    /// back when not.
    static let commits: [(name: String, change: RelayChange, expected: RelayChange)] = {
        let queued = StoreFixtures.push("p1", device: "d1", at: 1)
        var withheld = StoreFixtures.push("p2", device: "d2", at: 1)
        withheld.state = .skipped
        let claim = IngestClaim(owner: "node-1", leaseUntil: 9, pushIDs: ["p1"])
        var claimed = StoreFixtures.ingest([queued, withheld], key: "k")
        claimed.claim = claim
        let sendable = [ClaimedPush(entry: queued, deviceToken: "t1")]
        let call = StoreFixtures.ingest([StoreFixtures.push("p3", device: "d1", kind: .call, at: 1)])
        let record = CallRecord(
            id: "c1",
            appID: "a",
            userID: "u1",
            media: "audio",
            sealedCaller: [],
            createdAt: 1,
            expiresAt: 2,
            updatedAt: 1,
            devices: []
        )
        return [
            (
                "queued pushes are counted and wake the dispatchers; a skipped device is counted",
                IngestPlanner.change(StoreFixtures.ingest([queued, withheld]), call: nil, sendable: [], skipped: 2),
                RelayChange(
                    writes: [.accept(StoreFixtures.ingest([queued, withheld]))],
                    effectsWhenApplied: [.count(.queued, 1), .count(.skipped, 2), .wakeDispatchers]
                )
            ),
            (
                "pushes written claimed go to this node's dispatcher, or their room goes back; nobody else is woken",
                IngestPlanner.change(claimed, call: nil, sendable: sendable, skipped: 0),
                RelayChange(
                    writes: [.accept(claimed)],
                    effectsWhenApplied: [.count(.queued, 1), .handOff(sendable, claim)],
                    effectsUnlessApplied: [.releaseClaim(claim)]
                )
            ),
            (
                "a call is written with its record",
                IngestPlanner.change(call, call: record, sendable: [], skipped: 0),
                RelayChange(
                    writes: [.acceptCall(call, call: record)],
                    effectsWhenApplied: [.count(.queued, 1), .wakeDispatchers]
                )
            ),
            (
                "nothing to push: the write alone",
                IngestPlanner.change(StoreFixtures.ingest([withheld]), call: nil, sendable: [], skipped: 0),
                RelayChange(writes: [.accept(StoreFixtures.ingest([withheld]))])
            ),
        ]
    }()

    @Test("an ingest's commit: the write, then counts, hand-off and wake-up once applied", arguments: commits.indices)
    func commit(_ index: Int) {
        let (name, change, expected) = Self.commits[index]
        #expect(change == expected, "\(name)")
    }
}
