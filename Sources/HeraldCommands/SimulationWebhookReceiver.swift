import Foundation
import HeraldEncoding
import HeraldRelay
import HeraldServer
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// The backend's end of a simulation's webhook: a loopback listener that checks each event's
/// signature as a contact center would and answers 204, so the simulated relay delivers its events
/// for real instead of queueing them for nobody. It keeps what it took (`events`), for the flows
/// that show the backend's side (`herald simulate escalation`).
struct SimulationWebhookReceiver: Sendable {
    /// The app's webhook, pointing here.
    let settings: WebhookSettings
    /// The events answered 204, in the order they came.
    let events: ReceivedWebhookEvents

    /// Runs `body` with a receiver listening on a free loopback port; stops it afterwards.
    static func with<T: Sendable>(
        logger: Logger,
        _ body: (SimulationWebhookReceiver) async throws -> T
    ) async throws -> T {
        let secret = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let events = ReceivedWebhookEvents()
        let router = Router()
        router.post("/herald-events") { request, _ -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 1 << 20)
            let timestamp = request.headers[.init("Herald-Timestamp")!].flatMap { Int64($0) } ?? 0
            let signature = request.headers[.init("Herald-Signature")!] ?? ""
            // A wrong signature is refused as a real receiver would: the relay retries it.
            guard
                WebhookSignature.isValid(
                    signature,
                    secret: Array(secret.utf8),
                    timestamp: timestamp,
                    body: Array(buffer: body)
                ), let id = request.headers[.init("Herald-Event-Id")!]
            else { return .unauthorized }
            // A receiver bounds what it parses as every Herald listener does: an event is one JSON
            // object within the request limits.
            guard (try? JSONCheck.check(Array(buffer: body), limits: .request)) != nil,
                let event = ReceivedWebhookEvent(id: id, body: Data(buffer: body))
            else { return .badRequest }
            events.append(event)
            return .noContent
        }
        let ports = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in ports.continuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        return try await HeraldServer.withServices([app], logger: logger) {
            var bound = ports.stream.makeAsyncIterator()
            let port = await bound.next() ?? 0
            return try await body(
                SimulationWebhookReceiver(
                    settings: WebhookSettings(url: "http://127.0.0.1:\(port)/herald-events", secret: secret),
                    events: events
                )
            )
        }
    }
}

/// One event the backend's receiver took: its `Herald-Event-Id`, its type and the whole body.
struct ReceivedWebhookEvent: Sendable {
    var id: String
    var type: String
    /// When the relay wrote it, milliseconds since the epoch on the relay's clock.
    var createdAt: Int64
    /// The request's body, `{"id", "type", "app", "created_at", "data"}`.
    var body: Data

    private struct Envelope: Decodable {
        var type: String
        var createdAt: Int64

        enum CodingKeys: String, CodingKey {
            case type
            case createdAt = "created_at"
        }
    }

    /// The event in `body`, or nil when it is not a Herald event.
    init?(id: String, body: Data) {
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: body) else { return nil }
        self.id = id
        self.type = envelope.type
        self.createdAt = envelope.createdAt
        self.body = body
    }

    /// The event's `data`, read as `Value`.
    func data<Value: Decodable>(as type: Value.Type) throws -> Value {
        try JSONDecoder().decode(DataOnly<Value>.self, from: body).data
    }

    private struct DataOnly<Value: Decodable>: Decodable {
        var data: Value
    }
}

/// The events a receiver took, in order, with a wait for one that has not come yet: the receiver
/// signals each arrival, so a flow waits no longer than the relay takes to deliver.
final class ReceivedWebhookEvents: Sendable {
    private struct State {
        var events: [ReceivedWebhookEvent] = []
        /// Flows waiting for the next arrival, by ticket.
        var sleepers: [Int: CheckedContinuation<Void, Never>] = [:]
        var tickets = 0
    }

    private let state = Mutex(State())

    /// Every event taken so far.
    var all: [ReceivedWebhookEvent] { state.withLock { $0.events } }

    func append(_ event: ReceivedWebhookEvent) {
        let woken = state.withLock { state in
            state.events.append(event)
            defer { state.sleepers.removeAll() }
            return state.sleepers.values
        }
        for sleeper in woken { sleeper.resume() }
    }

    /// The first event `matches` takes, as soon as it came; nil when none came within `timeout`.
    func first(
        within timeout: Duration,
        where matches: @escaping @Sendable (ReceivedWebhookEvent) -> Bool
    ) async -> ReceivedWebhookEvent? {
        let deadline = ContinuousClock.now + timeout
        while !Task.isCancelled {
            let (found, count) = state.withLock { ($0.events.first(where: matches), $0.events.count) }
            if let found { return found }
            if ContinuousClock.now >= deadline { return nil }
            await arrival(beyond: count, until: deadline)
        }
        return nil
    }

    /// Returns once there are more than `count` events (at once if there are), at `deadline`, or
    /// when the task is cancelled.
    private func arrival(beyond count: Int, until deadline: ContinuousClock.Instant) async {
        let ticket = state.withLock { state in
            state.tickets += 1
            return state.tickets
        }
        await withDiscardingTaskGroup { group in
            group.addTask {
                try? await Task.sleep(until: deadline)
                self.wake(ticket)
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let arrived = state.withLock { state in
                        // The timer may have fired already: then there is nothing to wait for.
                        guard state.events.count == count, !Task.isCancelled, ContinuousClock.now < deadline
                        else { return true }
                        state.sleepers[ticket] = continuation
                        return false
                    }
                    if arrived { continuation.resume() }
                }
            } onCancel: {
                self.wake(ticket)
            }
            group.cancelAll()
        }
    }

    /// Ends the wait of `ticket`, if it is still waiting.
    private func wake(_ ticket: Int) {
        state.withLock { $0.sleepers.removeValue(forKey: ticket) }?.resume()
    }
}
