import Crypto
import Foundation
import HeraldCrypto
import HeraldPush
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import HeraldStoreSQLite
import HeraldTestSupport
import Logging
import Synchronization
import Testing

/// A transport that answers as its script says and records every request.
final class ScriptedWebhookTransport: WebhookTransport {
    private let sent = Mutex<[WebhookRequest]>([])
    private let script: @Sendable (WebhookRequest, Int) -> WebhookResponse

    /// `script` gets each request and how many were sent before it.
    init(_ script: @escaping @Sendable (WebhookRequest, Int) -> WebhookResponse = { _, _ in .status(200) }) {
        self.script = script
    }

    var requests: [WebhookRequest] { sent.withLock { $0 } }
    var eventIDs: [String] { requests.compactMap { $0.header("Herald-Event-Id") } }

    func send(_ request: WebhookRequest) async -> WebhookResponse {
        let index = sent.withLock { sent in
            sent.append(request)
            return sent.count - 1
        }
        return script(request, index)
    }
}

@Suite("Webhook dispatcher")
struct WebhookDispatcherTests {
    static let app = "com.example.chat"
    static let secret = "whsec-0123456789abcdef0123456789abcdef"
    static let start: Int64 = 1_800_000_000_000

    struct Setup {
        let relay: Relay
        let store: SQLiteStore
        let clock: ManualClock
        let directory: String
        let path: String
    }

    static func setup(webhook: Bool = true) async throws -> Setup {
        let directory = NSTemporaryDirectory() + "herald-webhooks-\(UUID().uuidString)"
        let path = directory + "/herald.sqlite"
        let store = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.webhooks"))
        let clock = ManualClock(at: start)
        let relay = Relay(
            store: store,
            masterKey: MasterKey.generate(),
            logger: Logger(label: "test.webhooks"),
            now: clock.now
        )
        try await relay.activation.saveApp(
            AppRecord(id: app, teamID: "TEAM123456"),
            webhook: webhook ? WebhookSettings(url: "https://backend.example/hooks", secret: secret) : nil
        )
        return Setup(relay: relay, store: store, clock: clock, directory: directory, path: path)
    }

    static func dispatcher(
        _ setup: Setup,
        _ transport: ScriptedWebhookTransport,
        owner: String = "node-a",
        configure: (inout WebhookDispatcherConfiguration) -> Void = { _ in }
    ) -> WebhookDispatcher {
        var configuration = WebhookDispatcherConfiguration()
        configuration.owner = owner
        configure(&configuration)
        return WebhookDispatcher(
            relay: setup.relay,
            transport: transport,
            configuration: configuration,
            logger: Logger(label: "test.webhooks")
        )
    }

    static func event(
        _ id: String,
        key: String,
        at time: Int64,
        type: WebhookEventType = .pushDelivered
    )
        -> WebhookEvent
    {
        WebhookEvent(
            id: id,
            appID: app,
            type: type,
            orderingKey: key,
            data: #"{"push_id":"\#(id)","state":"delivered"}"#,
            createdAt: time
        )
    }

    @Test("each event is posted with its body and headers, signed so the receiver can verify it on its own")
    func signsEvents() async throws {
        let setup = try await Self.setup()
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        try await setup.store.enqueueWebhookEvents([Self.event("e1", key: "push:p1", at: Self.start - 5)])
        let transport = ScriptedWebhookTransport()
        setup.clock.advance(by: 2_500)
        #expect(await Self.dispatcher(setup, transport).deliverBatch() == 1)

        let request = try #require(transport.requests.first)
        #expect(request.url == "https://backend.example/hooks")
        #expect(request.header("Herald-Event-Id") == "e1")
        #expect(request.header("Herald-Event-Type") == "push.delivered")
        #expect(request.header("Content-Type") == "application/json")
        let timestamp = try #require(request.header("Herald-Timestamp"))
        #expect(timestamp == "\((Self.start + 2_500) / 1000)")
        // Verified here with swift-crypto directly, not with the relay's own helper.
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array("\(timestamp).".utf8) + request.body,
            using: SymmetricKey(data: Array(Self.secret.utf8))
        )
        #expect(request.header("Herald-Signature") == "v1=" + mac.map { String(format: "%02x", $0) }.joined())
        let body = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        #expect(body["id"] as? String == "e1")
        #expect(body["type"] as? String == "push.delivered")
        #expect(body["app"] as? String == Self.app)
        #expect((body["created_at"] as? NSNumber)?.int64Value == Self.start - 5)
        #expect((body["data"] as? [String: Any])?["push_id"] as? String == "e1")

        let stored = try #require(try await setup.store.webhookEvent(id: "e1"))
        #expect(stored.state == .delivered)
        #expect(stored.deliveredAt == Self.start + 2_500)
        #expect(stored.attempts == 1)
        let view = try await setup.relay.webhooks.event(id: "e1")
        #expect(view.state == "delivered")
        #expect(view.data == .object(["push_id": .string("e1"), "state": .string("delivered")]))
    }

    @Test("a key's events arrive in order: the second waits while the first is retried; other keys go on")
    func orderPerKey() async throws {
        let setup = try await Self.setup()
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        try await setup.store.enqueueWebhookEvents([
            Self.event("a1", key: "call:a", at: Self.start, type: .callRinging),
            Self.event("b1", key: "call:b", at: Self.start + 1, type: .callRinging),
            Self.event("a2", key: "call:a", at: Self.start + 2, type: .callAnswered),
        ])
        // a1 is refused the first time only.
        let refused = Mutex(false)
        let transport = ScriptedWebhookTransport { request, _ in
            guard request.header("Herald-Event-Id") == "a1" else { return .status(200) }
            return refused.withLock { done in
                defer { done = true }
                return done ? .status(200) : .status(503)
            }
        }
        let dispatcher = Self.dispatcher(setup, transport)
        setup.clock.set(Self.start + 10)
        #expect(await dispatcher.deliverBatch() == 2)
        #expect(Set(transport.eventIDs) == ["a1", "b1"])
        let retried = try #require(try await setup.store.webhookEvent(id: "a1"))
        #expect(retried.state == .pending)
        #expect(retried.lastError == "HTTP 503")
        #expect(await dispatcher.deliverBatch() == 0, "a2 waits behind a1's retry")
        setup.clock.set(retried.nextAttemptAt)
        #expect(await dispatcher.deliverBatch() == 1)
        #expect(await dispatcher.deliverBatch() == 1)
        #expect(transport.eventIDs.filter { $0.hasPrefix("a") } == ["a1", "a1", "a2"])
        #expect(try await setup.store.webhookEvent(id: "a2")?.state == .delivered)
    }

    @Test("failed attempts back off: each wait is within the doubling ceiling, from half of it")
    func backoff() async throws {
        let setup = try await Self.setup()
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        try await setup.store.enqueueWebhookEvents([Self.event("e1", key: "push:p1", at: Self.start)])
        let transport = ScriptedWebhookTransport { _, _ in .unreachable("connection refused") }
        let dispatcher = Self.dispatcher(setup, transport)
        let backoff = WebhookDispatcherConfiguration().backoff
        for attempt in 1...8 {
            #expect(await dispatcher.deliverBatch() == 1)
            let stored = try #require(try await setup.store.webhookEvent(id: "e1"))
            #expect(stored.state == .pending)
            #expect(stored.attempts == attempt)
            #expect(stored.lastError == "connection refused")
            let wait = stored.nextAttemptAt - setup.clock.now()
            let ceiling = backoff.ceiling(attempt: attempt).components.seconds * 1000
            #expect(wait >= ceiling / 2 && wait <= ceiling, "attempt \(attempt): waits \(wait) ms")
            #expect(await dispatcher.deliverBatch() == 0, "not before its time")
            setup.clock.set(stored.nextAttemptAt)
        }
    }

    @Test("an event refused past its retry window is failed, with its last error, and sent no more")
    func givesUpAfterTheWindow() async throws {
        let setup = try await Self.setup()
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        try await setup.store.enqueueWebhookEvents([
            Self.event("e1", key: "push:p1", at: Self.start),
            Self.event("e2", key: "push:p1", at: Self.start + 1),
        ])
        let transport = ScriptedWebhookTransport { request, _ in
            request.header("Herald-Event-Id") == "e1" ? .status(500) : .status(204)
        }
        let dispatcher = Self.dispatcher(setup, transport) { $0.retryWindow = .seconds(3600) }
        var rounds = 0
        while try await setup.store.webhookEvent(id: "e1")?.state == .pending, rounds < 100 {
            rounds += 1
            #expect(await dispatcher.deliverBatch() >= 1)
            if let next = try await setup.store.webhookEvent(id: "e1"), next.state == .pending {
                #expect(next.nextAttemptAt - Self.start <= 3_600_000, "no attempt is planned past the window")
                setup.clock.set(next.nextAttemptAt)
            }
        }
        let failed = try #require(try await setup.store.webhookEvent(id: "e1"))
        #expect(failed.state == .failed)
        #expect(failed.lastError?.hasPrefix("gave up after \(failed.attempts) attempts: HTTP 500") == true)
        #expect(failed.attempts > 5)
        let sent = transport.requests.count
        setup.clock.advance(by: 86_400_000)
        #expect(await dispatcher.deliverBatch() == 1, "the key's next event goes once the first is given up")
        #expect(transport.eventIDs.dropFirst(sent) == ["e2"])
        #expect(try await setup.store.webhookEvent(id: "e2")?.state == .delivered)
    }

    @Test("an event whose node stopped mid-send is taken over by another node when its lease lapses")
    func leaseTakenOver() async throws {
        let setup = try await Self.setup()
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        try await setup.store.enqueueWebhookEvents([Self.event("e1", key: "call:c1", at: Self.start)])
        // Node A claimed it and died.
        let taken = try await setup.store.claimWebhookEvents(
            limit: 10,
            owner: "node-a",
            now: Self.start,
            leaseUntil: Self.start + 60_000
        )
        #expect(taken.count == 1)
        let transport = ScriptedWebhookTransport()
        let nodeB = Self.dispatcher(setup, transport, owner: "node-b")
        setup.clock.set(Self.start + 59_999)
        #expect(await nodeB.deliverBatch() == 0, "not while A's lease holds")
        setup.clock.set(Self.start + 60_000)
        #expect(await nodeB.deliverBatch() == 1)
        #expect(transport.eventIDs == ["e1"])
        let stored = try #require(try await setup.store.webhookEvent(id: "e1"))
        #expect(stored.state == .delivered)
        #expect(stored.attempts == 2)
        #expect(
            try await setup.store.completeWebhookEvent(id: "e1", owner: "node-a", .failed(error: "late"), now: 1)
                == false
        )
    }

    @Test("an event of an app whose webhook was removed is failed without a request")
    func removedWebhook() async throws {
        let setup = try await Self.setup(webhook: false)
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        try await setup.store.enqueueWebhookEvents([Self.event("e1", key: "push:p1", at: Self.start)])
        let transport = ScriptedWebhookTransport()
        #expect(await Self.dispatcher(setup, transport).deliverBatch() == 1)
        #expect(transport.requests.isEmpty)
        #expect(try await setup.store.webhookEvent(id: "e1")?.lastError == "the app has no webhook")
    }

    @Test("a webhook's url must be http(s) with a host and its secret 32 bytes; the secret is sealed at rest")
    func webhookSettings() async throws {
        let setup = try await Self.setup(webhook: false)
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        let app = AppRecord(id: Self.app, teamID: "TEAM123456")
        for (url, secret, field) in [
            ("ftp://backend.example/hooks", Self.secret, "webhook.url"),
            ("https://", Self.secret, "webhook.url"),
            ("not a url", Self.secret, "webhook.url"),
            ("https://backend.example/hooks", "short", "webhook.secret"),
        ] {
            let error = await #expect(throws: RelayError.self) {
                try await setup.relay.activation.saveApp(app, webhook: WebhookSettings(url: url, secret: secret))
            }
            #expect(error?.field == field, "\(url)")
        }
        let saved = try await setup.relay.activation.saveApp(
            app,
            webhook: WebhookSettings(url: "http://127.0.0.1:9/hooks", secret: Self.secret)
        )
        #expect(saved.webhook?.url == "http://127.0.0.1:9/hooks")
        #expect(saved.webhook?.sealedSecret != Array(Self.secret.utf8))
        let shown = String(decoding: try JSONEncoder().encode(saved), as: UTF8.self)
        #expect(shown.contains(#""secret_set":true"#))
        #expect(!shown.contains(Self.secret))
        for file in (try? FileManager.default.contentsOfDirectory(atPath: setup.directory)) ?? [] {
            let bytes = FileManager.default.contents(atPath: setup.directory + "/" + file) ?? Data()
            #expect(bytes.range(of: Data(Self.secret.utf8)) == nil, "the secret is in \(file)")
        }
    }

    @Test("a customer leaving a chat and coming back are two events, in order, keyed by the conversation")
    func chatEvents() async throws {
        let setup = try await Self.setup()
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        let device = StoreFixtures.device("d1", user: "alice")
        try await setup.store.saveDevice(device)
        try await setup.relay.transcripts.chatDisconnect(
            device: device,
            conversation: "chat-1",
            ChatDisconnectRequest(transcriptPosition: 3)
        )
        setup.clock.advance(by: 1_000)
        _ = try await setup.relay.transcripts.chatConnect(device: device, conversation: "chat-1")
        // Connected already: nothing to report.
        _ = try await setup.relay.transcripts.chatConnect(device: device, conversation: "chat-1")
        let page = try await setup.relay.webhooks.events(app: Self.app, state: nil, limit: 10, cursor: nil)
        #expect(page.events.map(\.type) == ["chat.customer_offline", "chat.customer_back"])
        #expect(page.events.allSatisfy { $0.orderingKey == "conversation:chat-1" })
        let expected: WebhookJSON = .object([
            "conversation": .string("chat-1"), "device_id": .string("d1"), "user_id": .string("alice"),
            "transcript_position": .integer(3), "disconnected_at": .integer(Self.start),
        ])
        #expect(page.events.map(\.data) == [expected, expected])

        let transport = ScriptedWebhookTransport()
        let dispatcher = Self.dispatcher(setup, transport)
        #expect(await dispatcher.deliverBatch() == 1, "the second waits for the first")
        #expect(await dispatcher.deliverBatch() == 1)
        #expect(
            transport.requests.compactMap { $0.header("Herald-Event-Type") } == [
                "chat.customer_offline", "chat.customer_back",
            ]
        )
    }

    @Test("an app without a webhook gets no events queued")
    func noWebhookNoEvents() async throws {
        let setup = try await Self.setup(webhook: false)
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        let device = StoreFixtures.device("d1", user: "alice")
        try await setup.store.saveDevice(device)
        try await setup.relay.transcripts.chatDisconnect(
            device: device,
            conversation: "chat-1",
            ChatDisconnectRequest(transcriptPosition: 3)
        )
        _ = try await setup.relay.transcripts.chatConnect(device: device, conversation: "chat-1")
        #expect(try await setup.store.webhookQueueDepth() == 0)
        #expect(try await setup.relay.webhooks.events(app: Self.app, state: nil, limit: 10, cursor: nil).events.isEmpty)
    }

    @Test("the janitor deletes delivered events once message_retention has passed, never undelivered ones")
    func retention() async throws {
        let setup = try await Self.setup()
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        try await setup.store.enqueueWebhookEvents([
            Self.event("done", key: "push:p1", at: Self.start),
            Self.event("waiting", key: "push:p2", at: Self.start + 10 * 86_400_000),
        ])
        #expect(await Self.dispatcher(setup, ScriptedWebhookTransport()).deliverBatch() == 1)
        let retention = RelayConfiguration().messageRetention * 1000
        setup.clock.advance(by: retention)
        #expect(try await setup.relay.webhooks.purgeFinished() == 0, "not before the retention ends")
        setup.clock.advance(by: 1)
        #expect(try await setup.relay.webhooks.purgeFinished() == 1)
        #expect(try await setup.store.webhookEvent(id: "done") == nil)
        #expect(try await setup.store.webhookEvent(id: "waiting")?.state == .pending)
    }
}
