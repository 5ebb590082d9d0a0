import Foundation
import HeraldCrypto
import HeraldPush
import HeraldRelayAPI
public import HeraldStore
import HeraldTracing
public import Logging
import Metrics
public import ServiceLifecycle
import Synchronization

/// Delivers the apps' webhook events from the store's durable queue: claims events that are due
/// (each the first undelivered one of its ordering key, so a key's events arrive in order), signs
/// each (`WebhookSignature`), posts it through a `WebhookTransport`, and records the outcome: 2xx
/// is delivered; anything else is retried with `Backoff` until the retry window since the event's
/// creation has passed, then the event is `failed`.
///
/// Up to `concurrency` attempts are in flight at once, each of its own key; whenever one ends,
/// its slot is claimed for again at once, so a receiver that holds one request open (or never
/// answers) delays no other key's events by more than the idle poll.
///
/// Every relay node runs one; they share the queue (claims are leased in the node's name, and a
/// lease that lapsed is taken over). Run it under a `ServiceGroup`: on graceful shutdown it stops
/// claiming and finishes the attempts in flight. Delivery is at least once: a receiver
/// deduplicates by `Herald-Event-Id`.
public final class WebhookDispatcher: Service, Sendable {
    private let context: RelayContext
    private let transport: any WebhookTransport
    private let configuration: WebhookDispatcherConfiguration
    private let logger: Logger
    private let latency = Metrics.Timer(label: "herald_relay_webhook_delivery_latency_seconds")
    private let depth = Gauge(label: "herald_relay_webhook_queue_depth")
    private let inFlightGauge = Gauge(label: "herald_relay_webhook_attempts_in_flight")
    /// When the queue depth was last read (milliseconds).
    private let depthReadAt = Atomic<Int64>(0)
    /// Attempts `run` has under way: the slots of `concurrency` taken.
    private let inFlight = Atomic<Int>(0)
    /// When a failed attempt was last logged (milliseconds): one warning a minute says why events
    /// wait, however many fail.
    private let lastRetryWarning = Atomic<Int64>(Int64.min)

    public init(
        relay: Relay,
        transport: any WebhookTransport,
        configuration: WebhookDispatcherConfiguration = WebhookDispatcherConfiguration(),
        logger: Logger
    ) {
        self.context = relay.context
        self.transport = transport
        self.configuration = configuration
        self.logger = logger
    }

    /// Wakes the dispatcher: events were written.
    public func wake() { context.webhooksWritten.signal() }

    /// Attempts under way now (at most `concurrency`).
    public var attemptsInFlight: Int { inFlight.load(ordering: .relaxed) }

    public func run() async throws {
        // Each attempt is a child of this group: the loop never waits for one, and when the loop
        // ends (graceful shutdown) the group waits for those still in flight, which record their
        // outcomes. Discarding: a finished attempt leaves nothing behind.
        await withDiscardingTaskGroup { group in
            // Cancelled rather than shut down, the wait returns at once: stop, or the loop spins.
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                let limit = configuration.claimLimit(inFlight: inFlight.load(ordering: .relaxed))
                var claimed: [StoredWebhookEvent] = []
                if limit > 0 { claimed = await claim(limit: limit) }
                for event in claimed {
                    started()
                    group.addTask {
                        await self.deliver(event)
                        self.finished()
                        // A slot is free, and the key's next event may be due now: claim again.
                        self.context.webhooksWritten.signal()
                    }
                }
                configuration.watch?(.passed)
                // A full claim with slots still free: more may be due at once.
                if limit > 0 && claimed.count == limit
                    && configuration.claimLimit(inFlight: inFlight.load(ordering: .relaxed)) > 0
                {
                    continue
                }
                await cancelWhenGracefulShutdown {
                    await self.context.webhooksWritten.wait(timeout: self.configuration.idlePoll)
                }
            }
            configuration.watch?(.draining)
        }
    }

    /// Claims one batch (`batchSize` events at most), sends its events at once and records their
    /// outcomes; returns how many it claimed (0: nothing was due). `run` does not wait for whole
    /// batches; this is for a caller that steps the queue itself.
    @discardableResult
    public func deliverBatch() async -> Int {
        let claimed = await claim(limit: configuration.batchSize)
        await withDiscardingTaskGroup { group in
            for event in claimed {
                started()
                group.addTask {
                    await self.deliver(event)
                    self.finished()
                }
            }
        }
        return claimed.count
    }

    /// Claims up to `limit` due events under this node's lease; none when the store fails (logged).
    private func claim(limit: Int) async -> [StoredWebhookEvent] {
        let time = context.clock.now()
        await refreshDepth(at: time)
        do {
            return try await context.store.claimWebhookEvents(
                StoreWork.Lease(
                    owner: configuration.owner,
                    now: time,
                    until: time + configuration.claimLease.milliseconds,
                    limit: limit
                )
            )
        } catch {
            logger.warning("cannot claim webhook events", metadata: ["error": "\(error)"])
            return []
        }
    }

    private func started() {
        inFlightGauge.record(inFlight.add(1, ordering: .relaxed).newValue)
    }

    private func finished() {
        inFlightGauge.record(inFlight.subtract(1, ordering: .relaxed).newValue)
    }

    private func deliver(_ stored: StoredWebhookEvent) async {
        let event = stored.event
        // An event made from a traced push is sent in a span of that push's trace, and the
        // request carries the span as `traceparent` (docs/tracing.md).
        let completion = await context.tracing.withSpan(
            "herald.webhook.deliver",
            kind: .client,
            inTraceOf: event.traceParent
        ) { span in
            span.set("herald.webhook.event_id", event.id)
            span.set("herald.webhook.event_type", event.type.rawValue)
            span.set("herald.webhook.attempt", stored.attempts)
            return await attempt(stored, traceParent: context.tracing.traceParent(of: span), span: span)
        }
        let time = context.clock.now()
        let recorded: Bool
        do {
            recorded = try await context.store.completeWebhookEvent(
                id: event.id,
                owner: configuration.owner,
                completion,
                now: time
            )
        } catch {
            // The lease lapses and the event is sent again: at least once.
            logger.warning(
                "cannot record a webhook event's outcome",
                metadata: ["event": "\(event.id)", "error": "\(error)"]
            )
            return
        }
        guard recorded else {
            logger.debug("a webhook event's lease lapsed before its outcome", metadata: ["event": "\(event.id)"])
            return
        }
        let outcome: String
        switch completion {
        case .delivered:
            outcome = "delivered"
            latency.recordMilliseconds(max(0, time - event.createdAt))
        case .retry(let at, let error):
            outcome = "retried"
            logRetry(stored, next: at, error: error, now: time)
        case .failed(let error):
            outcome = "failed"
            logger.warning(
                "webhook event given up",
                metadata: [
                    "event": "\(event.id)", "app": "\(event.appID)", "type": "\(event.type.rawValue)",
                    "attempts": "\(stored.attempts)", "error": "\(error)",
                ]
            )
        }
        Counter(
            label: "herald_relay_webhook_events_total",
            dimensions: [("type", event.type.rawValue), ("outcome", outcome)]
        ).increment()
    }

    /// One attempt at an event: its signed request sent, and what to record of the answer.
    private func attempt(
        _ stored: StoredWebhookEvent,
        traceParent: String?,
        span: TraceSpan
    ) async
        -> WebhookCompletion
    {
        switch await request(for: stored.event) {
        case .failure(let reason):
            span.fail(reason.reason)
            return .failed(error: reason.reason)
        case .success(var request):
            if let traceParent { request.headers.append(WebhookHeader(PushTracing.traceParentHeader, traceParent)) }
            switch await transport.send(request) {
            case .status(let status) where (200..<300).contains(status):
                span.set("http.response.status_code", status)
                return .delivered
            case .status(let status):
                span.set("http.response.status_code", status)
                span.fail("HTTP \(status)")
                return retryOrGiveUp(stored, error: "HTTP \(status)")
            case .unreachable(let reason):
                span.fail(reason)
                return retryOrGiveUp(stored, error: reason)
            }
        }
    }

    /// Logs a failed attempt to be retried: a warning at most once a minute (a receiver that is
    /// down fails every event, and one line says why they wait), each one at debug. The app, the
    /// event and the error only: never the body or the secret, nor the URL (which may carry a
    /// token in its query).
    private func logRetry(_ stored: StoredWebhookEvent, next: Int64, error: String, now time: Int64) {
        let metadata: Logger.Metadata = [
            "event": "\(stored.event.id)", "app": "\(stored.event.appID)", "type": "\(stored.event.type.rawValue)",
            "attempts": "\(stored.attempts)", "error": "\(error)", "next_attempt_at": "\(next)",
            "next_attempt_in_ms": "\(max(0, next - time))",
        ]
        let last = lastRetryWarning.load(ordering: .relaxed)
        if last == Int64.min || time - last >= 60_000 || time < last,
            lastRetryWarning.compareExchange(expected: last, desired: time, ordering: .relaxed).exchanged
        {
            logger.warning("webhook events are waiting: a receiver failed an attempt", metadata: metadata)
        } else {
            logger.debug("webhook event to be retried", metadata: metadata)
        }
    }

    /// The signed request for an event, or why it cannot be sent at all.
    private func request(for event: WebhookEvent) async -> Result<WebhookRequest, Failure> {
        guard let app = try? await context.app(id: event.appID), let webhook = app.webhook else {
            return .failure(Failure("the app has no webhook"))
        }
        guard let secret = context.webhookSecret(webhook, appID: app.id) else {
            return .failure(Failure("the app's webhook secret cannot be opened"))
        }
        let body = Array(Self.body(of: event).utf8)
        let timestamp = context.clock.now() / 1000
        let signature = secret.withUnsafeBytes { key in
            WebhookSignature.header(secret: Array(key), timestamp: timestamp, body: body)
        }
        return .success(
            WebhookRequest(
                url: webhook.url,
                headers: [
                    WebhookHeader("Content-Type", "application/json"),
                    WebhookHeader("Herald-Event-Id", event.id),
                    WebhookHeader("Herald-Event-Type", event.type.rawValue),
                    WebhookHeader("Herald-Timestamp", "\(timestamp)"),
                    WebhookHeader("Herald-Signature", signature),
                ],
                body: body
            )
        )
    }

    /// Why an event cannot be sent.
    struct Failure: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// A failed attempt's completion: another attempt after the backoff, or `failed` once the
    /// next attempt would fall past the retry window.
    private func retryOrGiveUp(_ stored: StoredWebhookEvent, error: String) -> WebhookCompletion {
        let next = context.clock.now() + configuration.backoff.delay(attempt: stored.attempts).milliseconds
        if next - stored.event.createdAt > configuration.retryWindow.milliseconds {
            return .failed(error: "gave up after \(stored.attempts) attempts: \(error)")
        }
        return .retry(at: next, error: error)
    }

    /// The event's JSON body: `{"id","type","app","created_at","data"}`, `created_at` in
    /// milliseconds since the epoch, `data` as the store keeps it.
    public static func body(of event: WebhookEvent) -> String {
        "{\"id\":" + JSONText.quoted(event.id) + ",\"type\":" + JSONText.quoted(event.type.rawValue) + ",\"app\":"
            + JSONText.quoted(event.appID) + ",\"created_at\":\(event.createdAt),\"data\":" + event.data + "}"
    }

    /// Reads the queue depth for its gauge, at most every five seconds.
    private func refreshDepth(at time: Int64) async {
        let last = depthReadAt.load(ordering: .relaxed)
        guard time < last || time - last >= 5_000 else { return }
        depthReadAt.store(time, ordering: .relaxed)
        if let count = try? await context.store.webhookQueueDepth() { depth.record(count) }
    }
}
