import Crypto
import Foundation
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
            guard let json = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
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
        var logger = Logger(label: "test.receiver")
        logger.logLevel = .critical
        let ports = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: receiver.router(),
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { ports.continuation.yield($0.localAddress?.port ?? 0) },
            logger: logger
        )
        let group = ServiceGroup(services: [app], logger: logger)
        tasks.addTask { try await group.run() }
        var iterator = ports.stream.makeAsyncIterator()
        return (group, await iterator.next() ?? 0)
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
                try await harness.eventually("8 events queued") {
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
                        try await harness.eventually("attempts in step \(step)") {
                            receiver.requests.withLock { $0.count } > before
                        }
                    } else {
                        try await harness.eventually("refused attempts in step \(step)") {
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
                try await harness.eventually("every event delivered", timeout: .seconds(30)) {
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
