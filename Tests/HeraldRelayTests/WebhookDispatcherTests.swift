import Crypto
import Foundation
import HeraldCrypto
import HeraldPush
import HeraldRelay
import HeraldRelayAPI
import HeraldSimulation
import HeraldStore
import HeraldStoreSQLite
import HeraldTestSupport
import Logging
import ServiceLifecycle
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

/// Events whose requests are held open until the test lets each one go (a receiver that takes
/// its time), every other one let through at once; shared by the test transport and the loopback
/// receiver.
final class EventGates: Sendable {
    private struct State {
        var arrived: [String] = []
        var open: Set<String> = []
        var gates: [String: CheckedContinuation<Void, Never>] = [:]
        var released: Set<String> = []
    }

    private let state = Mutex(State())
    private let held: Set<String>

    init(holding held: Set<String>) {
        self.held = held
    }

    /// The event ids in the order their requests arrived.
    var arrived: [String] { state.withLock { $0.arrived } }
    /// The ids whose requests are held open now.
    var open: Set<String> { state.withLock { $0.open } }

    /// Records the request of event `id`; returns at once unless the event is held, then when
    /// the test releases it.
    func pass(_ id: String) async {
        state.withLock { $0.arrived.append(id) }
        guard held.contains(id) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let goOn = state.withLock { state -> Bool in
                if state.released.contains(id) { return true }
                state.open.insert(id)
                state.gates[id] = continuation
                return false
            }
            if goOn { continuation.resume() }
        }
    }

    /// Answers the event's held request (and any later one of it at once).
    func release(_ id: String) {
        let gate = state.withLock { state in
            state.released.insert(id)
            state.open.remove(id)
            return state.gates.removeValue(forKey: id)
        }
        gate?.resume()
    }

    /// Answers every held request: a failing test must not leave anything waiting.
    func releaseAll() {
        for id in held { release(id) }
    }
}

/// A transport that holds the requests of the events it is told to hold open until the test lets
/// each one go, and answers every other request 200 at once.
final class HeldWebhookTransport: WebhookTransport {
    let gates: EventGates

    init(holding held: Set<String>) {
        gates = EventGates(holding: held)
    }

    /// The ids of the events sent, in the order their requests started.
    var sent: [String] { gates.arrived }
    /// The ids whose requests are held open now.
    var open: Set<String> { gates.open }

    func send(_ request: WebhookRequest) async -> WebhookResponse {
        await gates.pass(request.header("Herald-Event-Id") ?? "?")
        return .status(200)
    }

    func release(_ id: String) { gates.release(id) }

    func releaseAll() { gates.releaseAll() }
}

@Suite("Webhook dispatcher")
struct WebhookDispatcherTests {
    static let app = "com.example.chat"
    static let secret = "whsec-0123456789abcdef0123456789abcdef"
    static let start: Int64 = 1_800_000_000_000

    struct Setup {
        let relay: Relay
        let store: SQLiteStore
        let clock: TestClock
        let directory: String
        let path: String
    }

    static func setup(webhook: Bool = true) async throws -> Setup {
        let directory = NSTemporaryDirectory() + "herald-webhooks-\(UUID().uuidString)"
        let path = directory + "/herald.sqlite"
        let store = try SQLiteStore(configuration: .init(path: path), logger: Logger(label: "test.webhooks"))
        let clock = TestClock(frozenAt: start)
        let relay = Relay(
            store: store,
            masterKey: MasterKey.generate(),
            logger: Logger(label: "test.webhooks"),
            clock: clock
        )
        try await relay.activation.saveApp(
            AppRecord(id: app, teamID: "TEAM123456"),
            webhook: webhook ? WebhookSettings(url: "https://backend.example/hooks", secret: secret) : nil
        )
        return Setup(relay: relay, store: store, clock: clock, directory: directory, path: path)
    }

    static func dispatcher(
        _ setup: Setup,
        _ transport: any WebhookTransport,
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
        setup.clock.advance(by: .milliseconds(2_500))
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
        setup.clock.advance(by: .milliseconds(86_400_000))
        #expect(await dispatcher.deliverBatch() == 1, "the key's next event goes once the first is given up")
        #expect(transport.eventIDs.dropFirst(sent) == ["e2"])
        #expect(try await setup.store.webhookEvent(id: "e2")?.state == .delivered)
    }

    // MARK: Attempts in parallel

    /// Runs the dispatcher under a `ServiceGroup` while `body` runs, then shuts it down gracefully
    /// (with every held request answered first when `body` threw).
    static func running(
        _ dispatcher: WebhookDispatcher,
        _ transport: HeldWebhookTransport,
        _ body: () async throws -> Void
    ) async throws {
        let group = ServiceGroup(services: [dispatcher], logger: Logger(label: "test.webhooks"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            do {
                try await body()
            } catch {
                transport.releaseAll()
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    /// Polls `condition` in real time until it holds; records an issue and throws after `timeout`.
    static func eventually(
        _ what: String,
        timeout: Duration = .seconds(10),
        _ condition: () async throws -> Bool
    ) async throws {
        try await HeraldTestSupport.eventually(what, timeout: timeout, condition)
    }

    static func state(_ setup: Setup, _ id: String) async throws -> WebhookEventState? {
        try await setup.store.webhookEvent(id: id)?.state
    }

    @Test("a receiver holding one event's request open delays no other key; that key's next event waits its turn")
    func slowKeyDoesNotDelayOthers() async throws {
        let setup = try await Self.setup()
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        try await setup.store.enqueueWebhookEvents([
            Self.event("slow-1", key: "call:slow", at: Self.start - 10),
            Self.event("slow-2", key: "call:slow", at: Self.start - 9),
            Self.event("fast-1", key: "push:fast-1", at: Self.start - 8),
        ])
        let transport = HeldWebhookTransport(holding: ["slow-1"])
        let dispatcher = Self.dispatcher(setup, transport) { $0.idlePoll = .seconds(60) }
        try await Self.running(dispatcher, transport) {
            try await Self.eventually("slow-1 held open and fast-1 delivered") {
                let fast = try await Self.state(setup, "fast-1")
                return transport.open == ["slow-1"] && fast == .delivered
            }
            // Events written while the slow request is open: the dispatcher is woken (its idle
            // poll is a minute here), claims them in a free slot and delivers them meanwhile.
            try await setup.store.enqueueWebhookEvents([
                Self.event("fast-2", key: "push:fast-2", at: Self.start - 1),
                Self.event("fast-3", key: "push:fast-1", at: Self.start),
            ])
            dispatcher.wake()
            try await Self.eventually("fast-2 and fast-3 delivered while slow-1 is open") {
                let second = try await Self.state(setup, "fast-2")
                let third = try await Self.state(setup, "fast-3")
                return second == .delivered && third == .delivered
            }
            #expect(transport.open == ["slow-1"])
            #expect(try await Self.state(setup, "slow-1") == .sending)
            let waiting = try #require(try await setup.store.webhookEvent(id: "slow-2"))
            #expect(waiting.state == .pending && waiting.attempts == 0, "slow-2 waits behind slow-1")
            #expect(!transport.sent.contains("slow-2"))
            #expect(dispatcher.attemptsInFlight == 1)

            transport.release("slow-1")
            try await Self.eventually("slow-2 delivered once slow-1 is") {
                try await Self.state(setup, "slow-2") == .delivered
            }
        }
        #expect(transport.sent.filter { $0.hasPrefix("slow") } == ["slow-1", "slow-2"])
        #expect(try await setup.store.webhookEvent(id: "slow-1")?.attempts == 1)
    }

    @Test("at most `concurrency` attempts at once; a slot that frees is filled at once, not when all are done")
    func boundedSlots() async throws {
        let setup = try await Self.setup()
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        try await setup.store.enqueueWebhookEvents([
            Self.event("held-a", key: "call:a", at: Self.start - 3),
            Self.event("held-b", key: "call:b", at: Self.start - 2),
            Self.event("next", key: "call:c", at: Self.start - 1),
        ])
        let transport = HeldWebhookTransport(holding: ["held-a", "held-b"])
        let steps = Recorded<WebhookLoopStep>()
        let dispatcher = Self.dispatcher(setup, transport) {
            $0.concurrency = 2
            $0.idlePoll = .milliseconds(10)
            $0.watch = { steps.append(contentsOf: [$0]) }
        }
        try await Self.running(dispatcher, transport) {
            try await Self.eventually("both slots taken") { transport.open == ["held-a", "held-b"] }
            // Three passes of the loop more: the third key is not claimed while both slots are taken.
            try await steps.wait(forCount: steps.all.count + 3, within: .seconds(10), "three more passes")
            #expect(transport.sent.count == 2)
            #expect(try await setup.store.webhookEvent(id: "next")?.attempts == 0)
            #expect(dispatcher.attemptsInFlight == 2)

            transport.release("held-a")
            try await Self.eventually("the freed slot sends the next event while held-b is open") {
                try await Self.state(setup, "next") == .delivered
            }
            #expect(transport.open == ["held-b"])
            #expect(try await Self.state(setup, "held-b") == .sending)
            transport.release("held-b")
            try await Self.eventually("held-b delivered") { try await Self.state(setup, "held-b") == .delivered }
        }
        #expect(transport.sent.count == 3)
        #expect(Set(transport.sent) == ["held-a", "held-b", "next"])
    }

    @Test("a graceful shutdown finishes the attempts in flight and records their outcomes")
    func shutdownFinishesAttempts() async throws {
        let setup = try await Self.setup()
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        try await setup.store.enqueueWebhookEvents([Self.event("held", key: "call:a", at: Self.start - 1)])
        let transport = HeldWebhookTransport(holding: ["held"])
        let draining = Recorded<Bool>()
        let dispatcher = Self.dispatcher(setup, transport) {
            $0.idlePoll = .milliseconds(10)
            $0.watch = { if $0 == .draining { draining.append(contentsOf: [true]) } }
        }
        let group = ServiceGroup(services: [dispatcher], logger: Logger(label: "test.webhooks"))
        let stopped = Recorded<Bool>()
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                try await group.run()
                stopped.append(contentsOf: [true])
            }
            try await Self.eventually("the request held open") { transport.open == ["held"] }
            await group.triggerGracefulShutdown()
            // The loop has seen the shutdown and claims no more: the dispatcher does not stop
            // while its attempt is open.
            try await draining.wait(forCount: 1, within: .seconds(10), "the dispatcher to see the shutdown")
            #expect(stopped.all.isEmpty, "stopped with an attempt in flight")
            #expect(dispatcher.attemptsInFlight == 1)
            #expect(try await Self.state(setup, "held") == .sending)
            transport.release("held")
            try await tasks.waitForAll()
        }
        #expect(stopped.all == [true])
        #expect(try await Self.state(setup, "held") == .delivered)
        #expect(transport.sent == ["held"])
        #expect(dispatcher.attemptsInFlight == 0)
    }

    @Test("a claim is leased for twice the attempt's timeout at least, so no other node takes an event being sent")
    func leaseOutlivesTheAttempt() async throws {
        let setup = try await Self.setup()
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        try await setup.store.enqueueWebhookEvents([Self.event("held", key: "call:a", at: Self.start - 1)])
        let transport = HeldWebhookTransport(holding: ["held"])
        let dispatcher = Self.dispatcher(setup, transport) {
            $0.lease = .seconds(5)
            $0.timeout = .seconds(30)
            $0.idlePoll = .milliseconds(10)
        }
        try await Self.running(dispatcher, transport) {
            try await Self.eventually("the request held open") { transport.open == ["held"] }
            let nodeB = { (now: Int64) in
                try await setup.store.claimWebhookEvents(
                    StoreWork.Lease(owner: "node-b", now: now, until: now + 1, limit: 5)
                )
            }
            #expect(try await nodeB(Self.start + 59_999).isEmpty, "leased for 60 s, not the 5 s configured")
            transport.release("held")
            try await Self.eventually("delivered") { try await Self.state(setup, "held") == .delivered }
        }
    }

    @Test("between attempts an event shows pending and its next attempt; a failing receiver is logged once a minute")
    func failedAttemptsShownAndLogged() async throws {
        let setup = try await Self.setup()
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        try await setup.store.enqueueWebhookEvents([
            Self.event("e1", key: "push:p1", at: Self.start - 2),
            Self.event("e2", key: "push:p2", at: Self.start - 1),
        ])
        let transport = ScriptedWebhookTransport { _, _ in .unreachable("connection refused") }
        let capture = LogCapture()
        var configuration = WebhookDispatcherConfiguration()
        configuration.owner = "node-a"
        let dispatcher = WebhookDispatcher(
            relay: setup.relay,
            transport: transport,
            configuration: configuration,
            logger: capture.logger(label: "test.webhooks")
        )
        #expect(await dispatcher.deliverBatch() == 2)

        for id in ["e1", "e2"] {
            let stored = try #require(try await setup.store.webhookEvent(id: id))
            let view = try await setup.relay.webhooks.event(id: id)
            #expect(view.state == "pending")
            #expect(view.attempts == 1)
            #expect(view.lastError == "connection refused")
            #expect(view.nextAttemptAt == stored.nextAttemptAt)
            #expect((view.nextAttemptAt ?? 0) > Self.start, "\(id): its next attempt is ahead")
        }
        let listed = try await setup.relay.webhooks.events(app: Self.app, state: "pending", limit: 10, cursor: nil)
        #expect(listed.events.count == 2)
        #expect(listed.events.allSatisfy { ($0.nextAttemptAt ?? 0) > Self.start })

        func warnings() -> [String] {
            capture.text.split(separator: "\n").map(String.init).filter {
                $0.hasPrefix("warning") && $0.contains("webhook events are waiting")
            }
        }
        #expect(warnings().count == 1, "one warning for two failed attempts: \(capture.text)")
        let line = try #require(warnings().first)
        #expect(line.contains("connection refused") && line.contains(Self.app) && line.contains("next_attempt_at"))
        #expect(!capture.text.contains(Self.secret))
        #expect(!capture.text.contains("backend.example"), "no URL in the logs")
        #expect(!capture.text.contains("push_id"), "no body in the logs")

        // A minute on, the next failure warns again.
        setup.clock.advance(by: .milliseconds(60_000))
        #expect(await dispatcher.deliverBatch() == 2)
        #expect(warnings().count == 2)
    }

    @Test("an event whose node stopped mid-send is taken over by another node when its lease lapses")
    func leaseTakenOver() async throws {
        let setup = try await Self.setup()
        defer { try? FileManager.default.removeItem(atPath: setup.directory) }
        try await setup.store.enqueueWebhookEvents([Self.event("e1", key: "call:c1", at: Self.start)])
        // Node A claimed it and died.
        let taken = try await setup.store.claimWebhookEvents(
            StoreWork.Lease(owner: "node-a", now: Self.start, until: Self.start + 60_000, limit: 10)
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
        setup.clock.advance(by: .milliseconds(1_000))
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
        let retention = RelayConfiguration().messageRetention
        setup.clock.advance(by: retention)
        #expect(try await setup.relay.webhooks.purgeFinished() == 0, "not before the retention ends")
        setup.clock.advance(by: .milliseconds(1))
        #expect(try await setup.relay.webhooks.purgeFinished() == 1)
        #expect(try await setup.store.webhookEvent(id: "done") == nil)
        #expect(try await setup.store.webhookEvent(id: "waiting")?.state == .pending)
    }
}
