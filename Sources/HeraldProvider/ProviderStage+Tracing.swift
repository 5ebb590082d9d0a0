public import HeraldPush
public import HeraldTracing

extension ProviderStage {
    /// The same stage, making its attempt spans with `tracing`.
    public func traced(by tracing: PushTracing) -> ProviderStage {
        ProviderStage(
            apnsKeys: Array(apnsKeys.values),
            defaultAPNsKey: defaultAPNsKey,
            fcmAccounts: fcmAccounts,
            defaultFCMAccount: defaultFCMAccount,
            webPush: webPush,
            hmsApps: hmsApps,
            defaultHMSApp: defaultHMSApp,
            clock: clock,
            logger: logger,
            tracing: tracing
        )
    }

    /// Sends every push through its network (both at once) and answers one outcome per push, in
    /// order. With tracing on, each traced push's attempt is a span in its trace (a child of the
    /// dispatcher's claim) with its network, its `apns-id` and the network's answer: never the
    /// token or the payload (docs/tracing.md).
    public func send(_ pushes: [Push]) async -> [PushOutcome] {
        guard tracing.isOn else { return await sendUntraced(pushes) }
        let spans = pushes.map { push in
            push.traceParent.flatMap { tracing.startSpan("herald.provider.attempt", kind: .client, parent: $0) }
        }
        for (push, span) in zip(pushes, spans) {
            guard let span else { continue }
            span.set("herald.push.id", push.id)
            span.set("herald.push.network", push.network.rawValue)
            if case .apns(let apns) = push.payload {
                span.set("apns.id", apns.apnsID)
                span.set("apns.push_type", apns.type.rawValue)
            }
        }
        let outcomes = await sendUntraced(pushes)
        for (span, outcome) in zip(spans, outcomes) {
            guard let span else { continue }
            Self.record(outcome, on: span)
            span.end()
        }
        return outcomes
    }

    /// The network's answer on an attempt's span: its kind, HTTP status when known, and reason.
    static func record(_ outcome: PushOutcome, on span: TraceSpan) {
        span.set("herald.push.outcome", outcome.kind.rawValue)
        switch outcome {
        case .delivered:
            span.set("http.response.status_code", 200)
        case .failed(let reason, let status):
            span.set("http.response.status_code", status)
            span.set("herald.push.reason", reason)
            span.fail(reason)
        case .tokenDead(let reason, _), .retryLater(let reason, _), .unreachable(let reason):
            span.set("herald.push.reason", reason)
            span.fail(reason)
        case .expired:
            span.fail("expired")
        }
    }
}
