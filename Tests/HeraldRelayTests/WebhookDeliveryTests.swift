import Crypto
import Foundation
import HeraldEncoding
import HeraldPush
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

/// A webhook receiver on loopback that deduplicates by event id and checks each signature with
/// swift-crypto on its own (the relay's helper is not used), answering as its mode says.
final class LoopbackReceiver: Sendable {
    enum Mode { case refuse, accept }

    struct Received: Sendable {
        var id: String
        var type: String
        var key: String
    }

    static let secret = "whsec-e2e-0123456789abcdef0123456789"
    let mode = Mutex(Mode.refuse)
    /// Every request, in arrival order (repeats included).
    let requests = Mutex<[Received]>([])
    /// The first accepted arrival of each id, in order.
    let accepted = Mutex<[Received]>([])
    let badSignatures = Atomic<Int>(0)
    let clock: @Sendable () -> Int64

    init(clock: @escaping @Sendable () -> Int64) {
        self.clock = clock
    }

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("hooks") { request, _ -> Response in
            let body = Array(try await request.body.collect(upTo: 1 << 20).readableBytesView)
            let timestamp = request.headers[.init("Herald-Timestamp")!] ?? ""
            let signature = request.headers[.init("Herald-Signature")!] ?? ""
            let mac = HMAC<SHA256>.authenticationCode(
                for: Array("\(timestamp).".utf8) + body,
                using: SymmetricKey(data: Array(Self.secret.utf8))
            )
            let expected = "v1=" + mac.map { String(format: "%02x", $0) }.joined()
            // The replay window: five minutes either side of the receiver's clock.
            let fresh = Int64(timestamp).map { abs($0 - self.clock() / 1000) <= 300 } ?? false
            guard signature == expected else {
                self.badSignatures.add(1, ordering: .relaxed)
                return Response(status: .unauthorized)
            }
            // A request signed before the test moved the clock on by ten minutes is stale: refused,
            // and signed again at its next attempt.
            guard fresh else { return Response(status: .unauthorized) }
            // Bounded as every Herald listener is, before Foundation parses it.
            guard (try? JSONCheck.check(body, limits: .request)) != nil,
                let json = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
                let id = json["id"] as? String, id == request.headers[.init("Herald-Event-Id")!],
                let type = json["type"] as? String, let data = json["data"] as? [String: Any]
            else {
                self.badSignatures.add(1, ordering: .relaxed)
                return Response(status: .badRequest)
            }
            let key =
                (data["push_id"] as? String).map { "push:" + $0 }
                ?? (data["conversation"] as? String).map { "conversation:" + $0 } ?? "?"
            let received = Received(id: id, type: type, key: key)
            self.requests.withLock { $0.append(received) }
            guard self.mode.withLock({ $0 }) == .accept else { return Response(status: .serviceUnavailable) }
            self.accepted.withLock { accepted in
                if !accepted.contains(where: { $0.id == id }) { accepted.append(received) }
            }
            return Response(status: .noContent)
        }
        return router
    }
}

/// A receiver on loopback that holds the POSTs of the events it is told to hold open until the
/// test lets each one go, and answers every other one 204 at once.
final class HoldingReceiver: Sendable {
    let gates: EventGates

    init(holding held: Set<String>) {
        gates = EventGates(holding: held)
    }

    /// The event ids in the order their requests arrived.
    var arrived: [String] { gates.arrived }
    /// The ids whose requests are held open now.
    var open: Set<String> { gates.open }

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("hooks") { request, _ -> Response in
            _ = try await request.body.collect(upTo: 1 << 20)
            await self.gates.pass(request.headers[.init("Herald-Event-Id")!] ?? "?")
            return Response(status: .noContent)
        }
        return router
    }

    func release(_ id: String) { gates.release(id) }

    func releaseAll() { gates.releaseAll() }
}

@Suite("Webhook delivery, end to end", .timeLimit(.minutes(2)))
struct WebhookDeliveryTests {
    /// Starts the receiver on `port` (0 picks one); returns its group and bound port.
    static func start(
        _ receiver: LoopbackReceiver,
        port: Int,
        tasks: inout ThrowingTaskGroup<Void, any Error>
    )
        async -> (ServiceGroup, Int)
    {
        await start(router: receiver.router(), port: port, tasks: &tasks)
    }

    /// Starts a receiver's router on `port` (0 picks one); returns its group and bound port.
    static func start(
        router: Router<BasicRequestContext>,
        port: Int,
        tasks: inout ThrowingTaskGroup<Void, any Error>
    )
        async -> (ServiceGroup, Int)
    {
        var logger = Logger(label: "test.receiver")
        logger.logLevel = .critical
        let ports = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { ports.continuation.yield($0.localAddress?.port ?? 0) },
            logger: logger
        )
        let group = ServiceGroup(services: [app], logger: logger)
        tasks.addTask { try await group.run() }
        var iterator = ports.stream.makeAsyncIterator()
        return (group, await iterator.next() ?? 0)
    }

    static func event(_ id: String, key: String, at time: Int64) -> WebhookEvent {
        WebhookEvent(
            id: id,
            appID: RelayHarness.bundleID,
            type: .pushDelivered,
            orderingKey: key,
            data: #"{"push_id":"\#(id)","state":"delivered"}"#,
            createdAt: time
        )
    }

    /// An event as `GET /v1/webhooks/events/{id}` shows it.
    static func shown(_ harness: RelayHarness, _ id: String) async throws -> [String: Any] {
        let reply = try await harness.call(.GET, "/v1/webhooks/events/" + id)
        #expect(reply.status == 200, "\(reply.text)")
        return reply.json
    }

    @Test("a receiver holding one key's POST open: other keys' events are delivered meanwhile, over HTTP")
    func slowKeyOverHTTP() async throws {
        var setup = RelayHarness.Setup()
        setup.webhooks = {
            $0.idlePoll = .milliseconds(20)
            // Longer than the test: the held request ends when the test lets it go, not before.
            $0.timeout = .seconds(60)
        }
        try await RelayHarness.with(setup) { harness in
            let receiver = HoldingReceiver(holding: ["slow-1"])
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                let (group, port) = await Self.start(router: receiver.router(), port: 0, tasks: &tasks)
                do {
                    try await Self.slowKeyScenario(harness, receiver, port: port)
                } catch {
                    // The held request must end, or the receiver cannot stop.
                    receiver.releaseAll()
                    await group.triggerGracefulShutdown()
                    throw error
                }
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
        }
    }

    /// The slow and fast keys against `receiver` on `port`, which holds slow-1's POST open.
    static func slowKeyScenario(_ harness: RelayHarness, _ receiver: HoldingReceiver, port: Int) async throws {
        _ = try await harness.relay.activation.saveApp(
            AppRecord(id: RelayHarness.bundleID, teamID: RelayHarness.teamID),
            webhook: WebhookSettings(url: "http://127.0.0.1:\(port)/hooks", secret: LoopbackReceiver.secret)
        )
        let now = harness.clock.now()
        try await harness.store.enqueueWebhookEvents([
            Self.event("slow-1", key: "call:slow", at: now),
            Self.event("slow-2", key: "call:slow", at: now + 1),
        ])
        try await eventually("slow-1 held open") { receiver.open == ["slow-1"] }

        // Other users' events, written while slow-1's POST is open.
        let written = ContinuousClock.now
        try await harness.store.enqueueWebhookEvents(
            (1...3).map { Self.event("fast-\($0)", key: "push:fast-\($0)", at: harness.clock.now()) }
        )
        try await eventually("the fast keys' events delivered", timeout: .seconds(15)) {
            let delivered = try await harness.relay.webhooks.events(
                app: RelayHarness.bundleID,
                state: "delivered",
                limit: 10,
                cursor: nil
            )
            return delivered.events.count == 3
        }
        let late = ContinuousClock.now - written
        // Typically tens of milliseconds; bounded loosely for a loaded machine, far below the held
        // request's 60 s (before, they waited for it to end).
        #expect(late < .seconds(10), "the fast keys waited \(late)")
        #expect(receiver.open == ["slow-1"], "slow-1 is still open")
        let slow = try await Self.shown(harness, "slow-1")
        #expect(slow["state"] as? String == "sending")
        #expect((slow["attempts"] as? NSNumber)?.intValue == 1)
        let next = try await Self.shown(harness, "slow-2")
        #expect(next["state"] as? String == "pending")
        #expect((next["attempts"] as? NSNumber)?.intValue == 0, "slow-2 waits behind slow-1")
        #expect(!receiver.arrived.contains("slow-2"))

        receiver.release("slow-1")
        try await eventually("slow-2 delivered after slow-1") {
            try await Self.shown(harness, "slow-2")["state"] as? String == "delivered"
        }
        #expect(receiver.arrived.filter { $0.hasPrefix("slow") } == ["slow-1", "slow-2"])
        #expect(try await Self.shown(harness, "slow-1")["state"] as? String == "delivered")
    }

    @Test(
        "a receiver refusing connections: each attempt fails at once, shows pending with its next attempt, and new events of other keys get theirs"
    )
    func refusingReceiver() async throws {
        var setup = RelayHarness.Setup()
        // Nothing listens there: every connection is refused. A long timeout, so that an attempt
        // that waited for it (as each did before) cannot pass for a slow machine's.
        setup.appWebhook = RelayHarness.unansweredWebhook
        setup.webhooks = {
            $0.idlePoll = .milliseconds(20)
            $0.timeout = .seconds(60)
            // The next attempt half a minute on at the soonest: the event stays pending while the
            // test reads it.
            $0.backoff = Backoff(base: .seconds(60), maximum: .seconds(60), jitter: .equal)
        }
        try await RelayHarness.with(setup) { harness in
            let written = ContinuousClock.now
            try await harness.store.enqueueWebhookEvents([Self.event("dead-1", key: "call:a", at: harness.clock.now())])
            try await eventually("dead-1's first attempt recorded", timeout: .seconds(15)) {
                let shown = try await Self.shown(harness, "dead-1")
                let attempts = (shown["attempts"] as? NSNumber)?.intValue ?? 0
                return attempts >= 1 && shown["state"] as? String == "pending"
            }
            let failedAfter = ContinuousClock.now - written
            #expect(failedAfter < .seconds(10), "a refused attempt took \(failedAfter)")
            let shown = try await Self.shown(harness, "dead-1")
            #expect(shown["last_error"] as? String == "connection refused")
            let nextAttempt = try #require((shown["next_attempt_at"] as? NSNumber)?.int64Value)
            let created = try #require((shown["created_at"] as? NSNumber)?.int64Value)
            #expect(nextAttempt - created >= 30_000, "the backoff's half minute at least")
            let listed = try await harness.call(
                .GET,
                "/v1/webhooks/events?app=\(RelayHarness.bundleID)&state=pending"
            )
            let events = listed.json["events"] as? [[String: Any]] ?? []
            #expect(events.first { $0["id"] as? String == "dead-1" }?["next_attempt_at"] is NSNumber)

            // A new event of another key gets its own attempt while dead-1 waits for its next.
            let second = ContinuousClock.now
            try await harness.store.enqueueWebhookEvents([Self.event("new-1", key: "call:b", at: harness.clock.now())])
            try await eventually("new-1 attempted", timeout: .seconds(15)) {
                let attempts = (try await Self.shown(harness, "new-1")["attempts"] as? NSNumber)?.intValue ?? 0
                return attempts >= 1
            }
            let attemptedAfter = ContinuousClock.now - second
            #expect(attemptedAfter < .seconds(10), "the new event waited \(attemptedAfter)")
        }
    }

    @Test(
        "a receiver refusing (503, then down) for a simulated hour loses nothing: every event once, in order per key"
    )
    func receiverDownForAnHour() async throws {
        var setup = RelayHarness.Setup()
        setup.webhooks = {
            $0.idlePoll = .milliseconds(20)
            // A connection the stopping receiver kept open times out rather than refuses.
            $0.timeout = .milliseconds(500)
        }
        try await RelayHarness.with(setup) { harness in
            let receiver = LoopbackReceiver(clock: { harness.clock.now() })
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                var (group, port) = await Self.start(receiver, port: 0, tasks: &tasks)
                let put = try await harness.call(
                    .PUT,
                    "/v1/apps/" + RelayHarness.bundleID,
                    body: """
                        {"team_id": "\(RelayHarness.teamID)",
                         "webhook": {"url": "http://127.0.0.1:\(port)/hooks", "secret": "\(LoopbackReceiver.secret)"}}
                        """
                )
                #expect(put.status == 200, "\(put.text)")
                #expect((put.json["webhook"] as? [String: Any])?["secret_set"] as? Bool == true)
                #expect(!put.text.contains(LoopbackReceiver.secret))

                // Pushes that finish (push.delivered each) and a customer leaving and coming back
                // to two chats (offline then back, per conversation).
                let phone = try await harness.phone(user: "alice")
                let device = try #require(try await harness.store.device(id: phone.deviceID))
                for index in 0..<4 {
                    _ = try await harness.relay.ingest.send(
                        message: MessageRequest(
                            to: "alice",
                            from: Party(id: "agent-1", name: "Agent"),
                            conversation: "conv-\(index)",
                            text: "hello \(index)"
                        )
                    )
                }
                for chat in ["chat-a", "chat-b"] {
                    try await harness.relay.transcripts.chatDisconnect(
                        device: device,
                        conversation: chat,
                        ChatDisconnectRequest(transcriptPosition: 1)
                    )
                    _ = try await harness.relay.transcripts.chatConnect(device: device, conversation: chat)
                }
                try await eventually("8 events queued") {
                    try await harness.store.webhookEvents(
                        app: RelayHarness.bundleID,
                        state: nil,
                        limit: 50,
                        after: nil
                    ).count == 8
                }

                // An hour of refusals, in ten-minute steps of the relay's clock: 503 first, then
                // the receiver is down (connection refused).
                for step in 0..<6 {
                    if step == 3 {
                        await group.triggerGracefulShutdown()
                    }
                    let before = receiver.requests.withLock { $0.count }
                    harness.clock.advance(by: .seconds(600))
                    if step < 3 {
                        try await eventually("attempts in step \(step)") {
                            receiver.requests.withLock { $0.count } > before
                        }
                    } else {
                        try await eventually("refused attempts in step \(step)") {
                            let events = try await harness.relay.webhooks.events(
                                app: RelayHarness.bundleID,
                                state: "pending",
                                limit: 50,
                                cursor: nil
                            ).events
                            return events.contains { $0.lastError == "connection refused" }
                        }
                    }
                }
                #expect(receiver.accepted.withLock { $0.isEmpty })
                let waiting = try await harness.relay.webhooks.events(
                    app: RelayHarness.bundleID,
                    state: nil,
                    limit: 50,
                    cursor: nil
                )
                #expect(waiting.events.allSatisfy { $0.state == "pending" || $0.state == "sending" })
                #expect(waiting.events.contains { $0.attempts > 1 })

                // Back, on the same port, accepting.
                receiver.mode.withLock { $0 = .accept }
                (group, port) = await Self.start(receiver, port: port, tasks: &tasks)
                harness.clock.advance(by: .seconds(900))
                try await eventually("every event delivered", timeout: .seconds(30)) {
                    try await harness.relay.webhooks.events(
                        app: RelayHarness.bundleID,
                        state: "delivered",
                        limit: 50,
                        cursor: nil
                    ).events.count == 8
                }
                let accepted = receiver.accepted.withLock { $0 }
                #expect(accepted.count == 8)
                #expect(Set(accepted.map(\.id)).count == 8, "once per id")
                #expect(receiver.badSignatures.load(ordering: .relaxed) == 0)
                #expect(accepted.filter { $0.type == "push.delivered" }.count == 4)
                for chat in ["chat-a", "chat-b"] {
                    #expect(
                        accepted.filter { $0.key == "conversation:" + chat }.map(\.type) == [
                            "chat.customer_offline", "chat.customer_back",
                        ],
                        "\(chat) in order"
                    )
                }
                let one = try await harness.call(.GET, "/v1/webhooks/events/" + accepted[0].id)
                #expect(one.status == 200)
                #expect(one.json["state"] as? String == "delivered")
                #expect(one.json["delivered_at"] is NSNumber)
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
        }
    }
}
