import Foundation
import HeraldCrypto
import HeraldRelay
import HeraldRelayAPI
import HeraldServer
import HeraldStore
import HeraldTestSupport
import HeraldTracing
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// A webhook receiver that answers 204 and keeps each request's event type and `traceparent`.
final class TraceHeaderReceiver: Sendable {
    struct Received: Sendable {
        var type: String
        var traceParent: String?
    }

    let received = Recorded<Received>()

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("hooks") { request, _ -> Response in
            _ = try await request.body.collect(upTo: 1 << 20)
            let received = Received(
                type: request.headers[.init("Herald-Event-Type")!] ?? "",
                traceParent: request.headers[.init("traceparent")!]
            )
            self.received.append(contentsOf: [received])
            return Response(status: .noContent)
        }
        return router
    }
}

/// One trace per push (docs/tracing.md): the relay's spans, exported over OTLP/HTTP by swift-otel
/// to a receiver of the test's own, chain from the backend's `traceparent` through ingest, the
/// store commit, the claim, the APNs attempt, the receipt and the webhook, and carry no content.
@Suite("One trace per push", .timeLimit(.minutes(2)))
struct TracingTests {
    static let text = "Your parcel 4417 shipped"
    static let sender = "Dana Whitfield"
    static let backendTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let backendSpan = "00f067aa0ba902b7"

    /// Runs `body` with a relay whose app's webhook is `hooks`, traced to `collector` when
    /// `traced` (else with tracing off), the message sent with the backend's `traceparent`; with
    /// `remoteProvider`, its pushes go through a `herald provider` service (the batch API).
    static func run(
        traced: Bool,
        remoteProvider: Bool = false,
        deadlines: [DeadlineRule] = [],
        _ body: (RelayHarness, OTLPCollector, TraceHeaderReceiver, RelayHarness.Phone, String) async throws -> Void
    ) async throws {
        var logger = Logger(label: "test.tracing")
        logger.logLevel = .critical
        let collector = OTLPCollector()
        let hooks = TraceHeaderReceiver()
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            let (collectorGroup, collectorPort) = await WebhookDeliveryTests.start(
                router: collector.router(),
                port: 0,
                tasks: &tasks
            )
            let (hookGroup, hookPort) = await WebhookDeliveryTests.start(router: hooks.router(), port: 0, tasks: &tasks)
            var setup = RelayHarness.Setup()
            setup.remoteProvider = remoteProvider
            setup.app.deadlines = deadlines
            setup.appWebhook = WebhookSettings(
                url: "http://127.0.0.1:\(hookPort)/hooks",
                secret: LoopbackReceiver.secret
            )
            var exporter: ServiceGroup?
            if traced {
                var configuration = TracingConfiguration(endpoint: "http://127.0.0.1:\(collectorPort)/v1/traces")
                configuration.exportDelay = .milliseconds(20)
                let backend = try configuration.makeBackend(logger: logger)
                let group = ServiceGroup(services: [backend.service], logger: logger)
                tasks.addTask { try await group.run() }
                exporter = group
                setup.tracing = backend.tracing
            }
            try await RelayHarness.with(setup) { harness in
                let phone = try await harness.phone(user: "rita")
                let sent = try await harness.call(
                    .POST,
                    "/v1/messages",
                    body:
                        #"{"to":"rita","from":{"id":"agent-7","name":"\#(sender)"},"conversation":"c-1","text":"\#(text)"}"#,
                    headers: [("traceparent", "00-\(backendTrace)-\(backendSpan)-01")]
                )
                #expect(sent.status == 202, "\(sent.text)")
                let pushID = try #require(try sent.decode(IngestReceipt.self).pushes.first?.pushID)
                try await harness.push(pushID, reaches: .delivered)
                let keys = try phone.sessionKeys()
                let shown = DeliveryReceipt(keyID: keys.keyID, pushID: pushID, stage: .shown, deviceTime: 20)
                #expect(try await ReceiptTests.post(harness, phone, shown).status == 201)
                try await body(harness, collector, hooks, phone, pushID)
            }
            for group in [exporter, hookGroup, collectorGroup].compactMap({ $0 }) {
                await group.triggerGracefulShutdown()
            }
            try await tasks.waitForAll()
        }
    }

    @Test(
        "the backend's trace runs through ingest, commit, claim, APNs attempt (in process or through the batch API), receipt and webhook; no content",
        arguments: [false, true]
    )
    func oneTracePerPush(remoteProvider: Bool) async throws {
        try await Self.run(traced: true, remoteProvider: remoteProvider) { harness, collector, hooks, phone, pushID in
            // The push keeps the request's span context in the outbox.
            let stored = try #require(try await harness.store.push(id: pushID))
            #expect(stored.traceParent?.contains(Self.backendTrace) == true)

            // The push's outcome and the phone's receipt, each a webhook event of the push.
            let hooked = try await hooks.received.wait(forCount: 2, within: .seconds(10), "the push's two webhooks")
            #expect(Set(hooked.map(\.type)) == ["push.delivered", "push.shown"])
            let names: Set<String> = [
                "POST /v1/messages", "herald.store.commit", "herald.dispatch.claim", "herald.provider.attempt",
                "herald.receipt", "herald.webhook.deliver",
            ]
            var spans: [String: OTLPCollector.Span] = [:]
            try await eventually("the push's spans exported (two webhook deliveries)", timeout: .seconds(15)) {
                spans = Dictionary(
                    collector.spans.all.filter { names.contains($0.name) }.map { ($0.name, $0) },
                    uniquingKeysWith: { first, _ in first }
                )
                let deliveries = collector.spans.all.filter { $0.name == "herald.webhook.deliver" }
                return spans.count == names.count && deliveries.count == 2
            }
            #expect(collector.undecodable.all.isEmpty)
            for span in spans.values { #expect(span.traceID == Self.backendTrace, "\(span.name)") }
            let ingest = try #require(spans["POST /v1/messages"])
            let claim = try #require(spans["herald.dispatch.claim"])
            let attempt = try #require(spans["herald.provider.attempt"])
            let deliveries = collector.spans.all.filter { $0.name == "herald.webhook.deliver" }
            #expect(ingest.parentSpanID == Self.backendSpan)
            #expect(ingest.kind == 2)  // server
            #expect(spans["herald.store.commit"]?.parentSpanID == ingest.spanID)
            #expect(claim.parentSpanID == ingest.spanID)
            #expect(attempt.parentSpanID == claim.spanID)
            #expect(spans["herald.receipt"]?.parentSpanID == ingest.spanID)
            #expect(deliveries.allSatisfy { $0.parentSpanID == ingest.spanID && $0.traceID == Self.backendTrace })
            #expect(attempt.attributes["apns.id"] == stored.apnsID)
            #expect(attempt.attributes["http.response.status_code"] == "200")
            #expect(attempt.attributes["herald.push.outcome"] == "delivered")
            #expect(spans["herald.receipt"]?.attributes["herald.receipt.stage"] == "shown")
            // Each webhook request carried its delivery span's context.
            #expect(
                Set(hooked.compactMap(\.traceParent))
                    == Set(deliveries.map { "00-\(Self.backendTrace)-\($0.spanID)-01" })
            )

            // No span says what the message said, who sent it, or where it went.
            let secrets = [Self.text, Self.sender, phone.messagingToken, phone.voipToken]
            for span in collector.spans.all {
                for (key, value) in span.attributes {
                    for secret in secrets where !secret.isEmpty {
                        #expect(!value.contains(secret) && !key.contains(secret), "\(span.name) \(key)")
                    }
                }
                #expect(!secrets.contains { !$0.isEmpty && span.name.contains($0) })
            }
        }
    }

    @Test("a deadline's escalation joins the trace of the push it escalates: its span, its push, its event")
    func escalationInTheTrace() async throws {
        let rule = DeadlineRule(kind: .message, after: 30, action: .resend)
        try await Self.run(traced: true, deadlines: [rule]) { harness, collector, _, phone, pushID in
            // A second message, never shown: its deadline resends it, in its own trace.
            let trace = "0af7651916cd43dd8448eb211c80319c"
            let sent = try await harness.call(
                .POST,
                "/v1/messages",
                body:
                    #"{"to":"rita","from":{"id":"agent-7","name":"Dana"},"conversation":"c-1","text":"Still there?"}"#,
                headers: [("traceparent", "00-\(trace)-b7ad6b7169203331-01")]
            )
            let unseen = try #require(try sent.decode(IngestReceipt.self).pushes.first?.pushID)
            try await harness.push(unseen, reaches: .delivered)
            harness.clock.advance(by: .seconds(31))
            var resent: OutboxEntry?
            try await eventually("the resent push") {
                let page = try await harness.store.pushes(matching: PushQuery(deviceID: phone.deviceID))
                guard let id = page.pushes.map(\.pushID).first(where: { ![pushID, unseen].contains($0) }) else {
                    return false
                }
                resent = try await harness.store.push(id: id)
                return resent != nil
            }
            #expect(resent?.traceParent?.contains(trace) == true)
            var deadline: OTLPCollector.Span?
            try await eventually("the deadline's span exported") {
                deadline = collector.spans.all.first { $0.name == "herald.deadline" }
                return deadline != nil
            }
            let ingest = collector.spans.all.first { $0.name == "POST /v1/messages" && $0.traceID == trace }
            #expect(deadline?.traceID == trace && deadline?.parentSpanID == ingest?.spanID)
            #expect(deadline?.attributes["herald.deadline.action"] == "resend")
            let unseenEvent = try await harness.events(orderingKey: "push:" + unseen).first { $0.type == .pushUnseen }
            #expect(unseenEvent?.traceParent?.contains(trace) == true)
            // The seen push has no deadline left: nothing of it was escalated.
            #expect(try await harness.events(orderingKey: "push:" + pushID).allSatisfy { $0.type != .pushUnseen })
        }
    }

    @Test("with tracing off the outbox keeps no trace context and the webhook request has no traceparent")
    func tracingOff() async throws {
        try await Self.run(traced: false) { harness, collector, hooks, _, pushID in
            let hooked = try await hooks.received.wait(forCount: 2, within: .seconds(10), "the push's two webhooks")
            #expect(Set(hooked.map(\.type)) == ["push.delivered", "push.shown"])
            #expect(hooked.allSatisfy { $0.traceParent == nil })
            #expect(try await harness.store.push(id: pushID)?.traceParent == nil)
            let events = try await harness.events(orderingKey: "push:" + pushID)
            #expect(!events.isEmpty && events.allSatisfy { $0.traceParent == nil })
            #expect(collector.spans.all.isEmpty)
        }
    }
}
