import AsyncHTTPClient
import Foundation
import HeraldConsole
import HeraldCrypto
import HeraldDispatch
import HeraldProvider
import HeraldRelay
import HeraldRelayAPI
import HeraldSandbox
import HeraldSimulation
import HeraldStore
import HeraldTestSupport
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
import Testing

@testable import HeraldServer
@testable import HeraldStorePostgres

/// The live channel with two relay nodes on one PostgreSQL (the throw-away cluster of
/// `scripts/with-postgres.sh`): the device's WebSocket on node A, messages ingested on node B,
/// pushes through a real APNs client to the sandbox. One test clock drives both nodes' timers.
@Suite("Live channel across relay nodes", .timeLimit(.minutes(2)))
struct LiveClusterTests {
    static let ackTimeout = Duration.seconds(10)

    @Test("a message ingested on node B reaches the WebSocket on node A; acknowledged, it is never pushed")
    func deliveredAcrossNodes() async throws {
        try await TwoNodeCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let phone = try await cluster.phone(user: "u1", on: a)
            let client = try await cluster.activeChannel(phone, on: a, seenBy: b)
            defer { client.close() }
            var frames = client.received.makeAsyncIterator()
            // From node B, and from node A itself: both go over A's channel.
            for node in [b, a] {
                let receipt = try await cluster.sendMessage(to: "u1", text: "from \(node.id)", via: node)
                #expect(receipt.pushes.isEmpty)
                try #require(receipt.skipped == [.init(deviceID: phone.deviceID, reason: "delivered_live")])
                let event = try #require(await LiveClient.next(&frames))
                #expect(event["type"] as? String == "message" && event["text"] as? String == "from \(node.id)")
                #expect(event["message_id"] as? String == receipt.id)
                client.send(#"{"type":"ack","message_id":"\#(receipt.id)"}"#)
            }
            try await eventually("the acknowledgements settled both handovers") {
                try await cluster.pendingHandovers() == 0
            }
            // Past the deadline every path that pushes has had its turn: the channel's timers
            // (woken by the advance) and both nodes' sweeps, which find nothing.
            cluster.clock.advance(by: Self.ackTimeout + .seconds(1))
            for node in cluster.nodes { #expect(await node.relay.ingest.pushOverdueHandovers() == 0) }
            #expect(try await a.store.outboxCounts().byState.values.reduce(0, +) == 0)
            #expect(cluster.accepted(token: phone.sandboxDevice.messagingToken).isEmpty)
        }
    }

    @Test("not acknowledged: exactly one push after the timeout, whichever node gives up first")
    func unacknowledgedIsPushedOnce() async throws {
        try await TwoNodeCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let phone = try await cluster.phone(user: "u1", on: a)
            let client = try await cluster.activeChannel(phone, on: a, seenBy: b)
            defer { client.close() }
            var frames = client.received.makeAsyncIterator()
            let receipt = try await cluster.sendMessage(to: "u1", text: "never acknowledged", via: b)
            try #require(receipt.skipped == [.init(deviceID: phone.deviceID, reason: "delivered_live")])
            #expect(try #require(await LiveClient.next(&frames))["message_id"] as? String == receipt.id)
            #expect(cluster.accepted(token: phone.sandboxDevice.messagingToken).isEmpty)

            cluster.clock.advance(by: Self.ackTimeout)
            try await eventually("the push") {
                try await a.store.outboxCounts().byState == [.delivered: 1]
            }
            try await eventually("no handover left") { try await cluster.pendingHandovers() == 0 }
            for node in cluster.nodes { #expect(await node.relay.ingest.pushOverdueHandovers() == 0) }
            let pushes = cluster.accepted(token: phone.sandboxDevice.messagingToken)
            #expect(pushes.count == 1)
            let pushed = try RelayFlowTests.heraldField(try #require(pushes.first).payload)
            #expect(pushed["message_id"] as? String == receipt.id)
            // A late acknowledgement changes nothing.
            client.send(#"{"type":"ack","message_id":"\#(receipt.id)"}"#)
            #expect(try await a.store.outboxCounts().byState == [.delivered: 1])
        }
    }

    @Test("the node holding the channel is gone: pushed at once when its lease ended, after the timeout otherwise")
    func deadNodeIsPushed() async throws {
        try await TwoNodeCluster.with { cluster in
            let b = cluster.nodes[1]
            let phone = try await cluster.phone(user: "u1", on: b)
            let token = phone.sandboxDevice.messagingToken
            // What a node that died leaves behind: its session, which nobody renews.
            func session(until: Int64) -> LiveSessionRecord {
                LiveSessionRecord(
                    deviceID: phone.deviceID,
                    nodeID: "node-gone",
                    sessionID: "s-gone",
                    conversation: "c-1",
                    expiresAt: until
                )
            }
            try await b.store.saveLiveSession(session(until: cluster.clock.now()))
            let afterLease = try await cluster.sendMessage(to: "u1", text: "lease over", via: b)
            #expect(afterLease.pushes.count == 1)
            try await eventually("the push after the lease") { cluster.accepted(token: token).count == 1 }

            // It died right after its last renewal: the message is handed over, nobody takes it,
            // and once its deadline passes a sweep pushes it, once.
            try await b.store.saveLiveSession(session(until: cluster.clock.now() + 30_000))
            let handedOver = try await cluster.sendMessage(to: "u1", text: "node gone", via: b)
            try #require(handedOver.skipped == [.init(deviceID: phone.deviceID, reason: "delivered_live")])
            #expect(try await cluster.pendingHandovers() == 1)
            cluster.clock.advance(by: Self.ackTimeout)
            try await eventually("the push after the timeout") { cluster.accepted(token: token).count == 2 }
            try await eventually("both pushes recorded") {
                try await b.store.outboxCounts().byState == [.delivered: 2]
            }
            #expect(try await cluster.pendingHandovers() == 0)
            let ids = try cluster.accepted(token: token).map {
                try RelayFlowTests.heraldField($0.payload)["message_id"] as? String
            }
            #expect(ids == [afterLease.id, handedOver.id])
        }
    }
}

/// Two relay nodes (`node-a`, `node-b`) as `herald serve` runs them, each with its own store on
/// one fresh PostgreSQL schema, sending through one APNs client to one sandbox.
final class TwoNodeCluster: Sendable {
    struct Node: Sendable {
        let id: String
        let relay: Relay
        let dispatcher: Dispatcher
        let store: PostgresStore
        let baseURL: String
    }

    static let apiKey = "test-api-key-0123456789"
    let stack: HeraldTestStack
    let nodes: [Node]
    let clock: TestClock
    let http: HTTPClient
    /// Each node's services, in `nodes`' order.
    let groups: [ServiceGroup]

    private init(stack: HeraldTestStack, nodes: [Node], clock: TestClock, http: HTTPClient, groups: [ServiceGroup]) {
        self.stack = stack
        self.nodes = nodes
        self.clock = clock
        self.http = http
        self.groups = groups
    }

    /// Stops a node's services (its API, dispatcher and timers), as a node that went away.
    func stop(_ node: Node) async {
        guard let index = nodes.firstIndex(where: { $0.id == node.id }) else { return }
        await groups[index].triggerGracefulShutdown()
    }

    /// `appWebhook`: the app's webhook; without one the nodes queue no events for it.
    /// - Parameter console: the console on both nodes; nil leaves it out.
    static func with(
        appWebhook: WebhookSettings? = nil,
        console: ConsoleConfiguration? = nil,
        _ body: (TwoNodeCluster) async throws -> Void
    ) async throws {
        // Never skipped: without the cluster (`make unit` runs every test beside one) this fails.
        let url = try #require(
            ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"],
            "HERALD_TEST_POSTGRES_URL is not set: run through scripts/with-postgres.sh"
        )
        var configuration = try PostgresStoreConfiguration(url: url)
        configuration.poolSize = 4
        configuration.schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        var logger = Logger(label: "test.cluster")
        logger.logLevel = .critical
        let clock = TestClock()
        clock.freeze()
        let masterKey = MasterKey.generate()
        let options = HeraldTestStack.Options(fcmAccount: RelayHarness.fcmAccount.account)
        try await HeraldTestStack.with(options) { stack in
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                var groups: [ServiceGroup] = []
                var nodes: [Node] = []
                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                func stop() async {
                    try? await http.shutdown()
                    for group in groups.reversed() { await group.triggerGracefulShutdown() }
                }
                do {
                    for id in ["node-a", "node-b"] {
                        let store = try await PostgresStore.open(configuration: configuration, logger: logger)
                        var parts = RelayNode.Parts(
                            store: store,
                            sender: ProviderStage(apns: stack.apns, fcm: stack.fcm),
                            masterKey: masterKey,
                            apiKey: apiKey
                        )
                        parts.relay.live.nodeID = id
                        parts.relay.live.ackTimeout = LiveClusterTests.ackTimeout
                        parts.relay.live.sweepInterval = .milliseconds(50)
                        parts.dispatcher.owner = id
                        parts.dispatcher.idlePoll = .milliseconds(50)
                        parts.clock = clock
                        parts.console = console
                        let ports = AsyncStream.makeStream(of: Int.self)
                        let node = try RelayNode(parts, logger: logger) { ports.continuation.yield($0) }
                        // In `herald serve`'s order, the store first: it stops last.
                        let services = RelayRuntime.startOrder(
                            providers: [],
                            node: node.tiers,
                            background: [],
                            listeners: []
                        )
                        let group = ServiceGroup(services: [store] + services, logger: logger)
                        groups.append(group)
                        tasks.addTask { try await group.run() }
                        var bound = ports.stream.makeAsyncIterator()
                        let port = await bound.next() ?? 0
                        nodes.append(
                            Node(
                                id: id,
                                relay: node.relay,
                                dispatcher: node.dispatcher,
                                store: store,
                                baseURL: "http://127.0.0.1:\(port)"
                            )
                        )
                    }
                    try await nodes[0].relay.activation.saveApp(
                        AppRecord(id: RelayHarness.bundleID, teamID: RelayHarness.teamID),
                        webhook: appWebhook
                    )
                    try await body(
                        TwoNodeCluster(stack: stack, nodes: nodes, clock: clock, http: http, groups: groups)
                    )
                } catch {
                    await stop()
                    try? await tasks.waitForAll()
                    await Self.drop(nodes, configuration: configuration, logger: logger)
                    throw error
                }
                await stop()
                try await tasks.waitForAll()
                await Self.drop(nodes, configuration: configuration, logger: logger)
            }
        }
    }

    private static func drop(_ nodes: [Node], configuration: PostgresStoreConfiguration, logger: Logger) async {
        for node in nodes { await node.store.close() }
        var base = configuration
        base.schema = "public"
        _ = try? await PostgresStore.withOpen(configuration: base, logger: logger) { admin in
            try? await admin.execute(unsafeSQL: "DROP SCHEMA IF EXISTS \(configuration.schema) CASCADE")
        }
    }

    /// Live deliveries not yet acknowledged nor pushed, on every node.
    func pendingHandovers() async throws -> Int {
        let rows = try await nodes[0].store.rows("count handovers", "SELECT count(*)::BIGINT FROM live_handovers")
        return Int(try #require(rows.first).decode(Int64.self))
    }

    /// What the sandbox accepted for a token.
    func accepted(token: String?) -> [SandboxInspectionRecord] {
        stack.core.inspection(token: token ?? "-").filter { $0.status == 200 }
    }

    func post(_ path: String, body: some Encodable, to node: Node) async throws -> (status: Int, body: Data) {
        var request = HTTPClientRequest(url: node.baseURL + path)
        request.method = .POST
        request.headers.add(name: "authorization", value: "Bearer " + Self.apiKey)
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(data: try JSONEncoder().encode(body)))
        let response = try await http.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), Data(bytes.readableBytesView))
    }

    /// Deactivates a phone through `node` (with the API key); answers the status.
    func delete(_ phone: Phone, via node: Node) async throws -> Int {
        var request = HTTPClientRequest(url: node.baseURL + "/v1/devices/" + phone.deviceID)
        request.method = .DELETE
        request.headers.add(name: "authorization", value: "Bearer " + Self.apiKey)
        return Int(try await http.execute(request, timeout: .seconds(30)).status.code)
    }

    func sendMessage(to user: String, text: String, via node: Node) async throws -> IngestReceipt {
        let request = MessageRequest(
            to: user,
            from: Party(id: "agent-7", name: "Dana"),
            conversation: "c-1",
            text: text,
            idempotencyKey: nil
        )
        let reply = try await post("/v1/messages", body: request, to: node)
        try #require(reply.status == 202 || reply.status == 200 || reply.status == 201, "\(reply.status)")
        return try JSONDecoder().decode(IngestReceipt.self, from: reply.body)
    }

    struct Phone {
        var sandboxDevice: SandboxDevice
        var activation: ActivationResponse
        var deviceID: String { activation.deviceID }
    }

    func phone(user: String, on node: Node) async throws -> Phone {
        let device = try stack.core.registerDevice(bundleID: RelayHarness.bundleID)
        let request = ActivationRequest(
            userID: user,
            app: RelayHarness.bundleID,
            platform: .ios,
            publicKey: KeyPair.generate().publicKey.base64,
            messagingToken: device.messagingToken,
            voipToken: device.voipToken
        )
        let reply = try await post("/v1/activations", body: request, to: node)
        try #require(reply.status == 201, "activation answered \(reply.status)")
        return Phone(
            sandboxDevice: device,
            activation: try JSONDecoder().decode(ActivationResponse.self, from: reply.body)
        )
    }

    /// Opens the device's channel on `node`, active in `c-1`, and waits until `other` sees it there.
    func activeChannel(_ phone: Phone, on node: Node, seenBy other: Node) async throws -> LiveClient {
        let client = LiveClient(
            baseURL: node.baseURL,
            deviceID: phone.deviceID,
            credential: phone.activation.deviceCredential
        )
        try await eventually("the live channel") { node.relay.live.isOpen(deviceID: phone.deviceID) }
        client.send(#"{"type":"presence","state":"active","conversation":"c-1"}"#)
        try await eventually("the channel seen from \(other.id)") {
            try await other.store.liveSessions(deviceIDs: [phone.deviceID], now: clock.now()).map(\.conversation)
                == ["c-1"]
        }
        return client
    }
}
