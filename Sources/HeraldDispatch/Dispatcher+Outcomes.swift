import HeraldPush
import HeraldStore
import HeraldTracing
import Logging
import Metrics

/// What the dispatcher makes of the network's answer for each push.
extension Dispatcher {
    func completion(for item: ClaimedPush, outcome: PushOutcome, at time: Int64) -> PushCompletion {
        let completion = decide(item, outcome: outcome, at: time)
        if case .finish(let state) = completion.disposition {
            logFinished(item, state: state, reason: completion.reason, at: time)
        }
        return completion
    }

    /// One line per push at its end: who and where, never the token or what it carries.
    private func logFinished(_ item: ClaimedPush, state: PushState, reason: String?, at time: Int64) {
        let entry = item.entry
        var metadata: Logger.Metadata = [
            "push": "\(entry.pushID)",
            "device": "\(entry.deviceID)",
            "app": "\(entry.app)",
            "network": "\(entry.network.rawValue)",
            "kind": "\(entry.kind.rawValue)",
            "outcome": "\(state.rawValue)",
            "attempts": .stringConvertible(entry.attempts),
            "latency_ms": .stringConvertible(max(0, time - entry.createdAt)),
        ]
        if let reason { metadata["reason"] = "\(reason)" }
        logger.info("push finished", metadata: metadata)
    }

    private func decide(_ item: ClaimedPush, outcome: PushOutcome, at time: Int64) -> PushCompletion {
        let id = item.entry.pushID
        switch outcome {
        case .delivered:
            completed.count(.delivered, item.entry)
            return PushCompletion(pushID: id, disposition: .finish(.delivered), reason: nil, deadToken: nil)
        case .tokenDead(let reason, _):
            completed.count(.tokenDead, item.entry)
            logger.warning(
                "the push network no longer accepts this device's token: the token is removed, and the device gets no pushes until its app activates again",
                metadata: ["device": "\(item.entry.deviceID)", "push": "\(id)", "reason": "\(reason)"]
            )
            return PushCompletion(
                pushID: id,
                disposition: .finish(.tokenDead),
                reason: reason,
                deadToken: (item.entry.deviceID, item.deviceToken)
            )
        case .failed(let reason, let status):
            completed.count(.failed, item.entry)
            let reason = status.map { "\(reason) (\($0))" } ?? reason
            return PushCompletion(pushID: id, disposition: .finish(.failed), reason: reason, deadToken: nil)
        case .expired:
            completed.count(.expired, item.entry)
            return PushCompletion(pushID: id, disposition: .finish(.expired), reason: nil, deadToken: nil)
        case .unreachable(let reason) where item.entry.nowOrNever,
            .retryLater(let reason, _) where item.entry.nowOrNever:
            // Its one attempt is spent: the network was told expiration 0, so a later attempt
            // would deliver what the backend said must not arrive late.
            completed.count(.expired, item.entry)
            let why = "now or never: not delivered on its one attempt: " + reason
            return PushCompletion(pushID: id, disposition: .finish(.expired), reason: why, deadToken: nil)
        case .unreachable(let reason):
            // Not the push's fault: due again at once, its attempt not counted, so it goes out
            // with the backlog when the network answers (the claim still expires it on time).
            held.increment()
            return PushCompletion(pushID: id, disposition: .requeue(at: time), reason: reason, deadToken: nil)
        case .retryLater(let reason, let after):
            let next = time + max(retryDelay(attempts: item.entry.attempts), after?.milliseconds ?? 0)
            if next >= item.entry.expiresAt {
                completed.count(.expired, item.entry)
                return PushCompletion(
                    pushID: id,
                    disposition: .finish(.expired),
                    reason: "expired while retrying: " + reason,
                    deadToken: nil
                )
            }
            retries.increment()
            let last = lastRetryWarning.load(ordering: .relaxed)
            if last == Int64.min || time - last >= 60_000,
                lastRetryWarning.compareExchange(expected: last, desired: time, ordering: .relaxed).exchanged
            {
                logger.warning(
                    "pushes are waiting: the push network asked to try again later",
                    metadata: [
                        "reason": "\(reason)", "push": "\(id)", "attempts": .stringConvertible(item.entry.attempts),
                        "next_attempt_in_ms": .stringConvertible(next - time),
                    ]
                )
            }
            return PushCompletion(pushID: id, disposition: .retry(at: next), reason: reason, deadToken: nil)
        }
    }

    /// Exponential backoff with equal jitter, in milliseconds: the ceiling doubles per attempt
    /// (`retryBase`, then twice that, … up to `retryMaximum`) and the delay is drawn uniformly
    /// from half the ceiling to the ceiling. Half is kept, rather than drawing from zero ("full
    /// jitter"), so a burst of throttled pushes never comes back almost at once.
    func retryDelay(attempts: Int) -> Int64 {
        Backoff(base: configuration.retryBase, maximum: configuration.retryMaximum, jitter: .equal)
            .delay(attempt: attempts).milliseconds
    }
}

extension OutboxEntry {
    /// The app the push is for: the APNs topic without its PushKit suffix, the FCM or Push Kit
    /// package, or the Web Push app.
    var app: String {
        switch payload {
        case .apns(let apns): apns.topic.hasSuffix(".voip") ? String(apns.topic.dropLast(5)) : apns.topic
        case .fcm(let fcm): fcm.package
        case .webPush(let webPush): webPush.app
        case .hms(let hms): hms.package
        }
    }
}

extension Dispatcher {
    /// The push to send, after a claim span in its trace (a child of the request that made it):
    /// its attempts are children of the claim. A push made while tracing was off has no trace.
    func traced(_ item: ClaimedPush) -> Push {
        var push = item.push
        guard let parent = item.entry.traceParent,
            let span = tracing.startSpan("herald.dispatch.claim", parent: parent)
        else {
            return push
        }
        span.set("herald.push.id", item.entry.pushID)
        span.set("herald.push.network", item.entry.network.rawValue)
        span.set("herald.push.kind", item.entry.kind.rawValue)
        span.set("herald.push.attempt", item.entry.attempts + 1)
        span.set("herald.dispatch.owner", configuration.owner)
        push.traceParent = tracing.traceParent(of: span)
        span.end()
        return push
    }
}
