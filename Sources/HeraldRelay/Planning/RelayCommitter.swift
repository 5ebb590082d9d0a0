import HeraldStore
import HeraldTracing
import Logging
import Metrics

extension RelayContext {
    /// Carries out a planner's change: its writes in one transaction, then its effects. The one
    /// place a planned relay operation does I/O.
    ///
    /// Answers the store's outcome per write; throws the change's `refusalWhenStale` when a write
    /// found its row gone, after the transaction (which wrote nothing for that write), and its
    /// `refusalWhenConflict` when the store refused the batch as conflicting.
    ///
    /// With tracing on, a change that queues pushes is committed in a span of its own (a child
    /// of the request's), and each push keeps the request's `traceparent` (docs/tracing.md).
    @discardableResult
    func commit(_ change: RelayChange, over live: LiveChannels? = nil) async throws(RelayError) -> [ChangeOutcome] {
        guard tracing.isOn, change.queuesPushes, let traceParent = tracing.currentTraceParent() else {
            return try await apply(change, over: live)
        }
        return try await tracing.withSpan("herald.store.commit") { span throws(RelayError) in
            span.set("herald.store.writes", change.writes.count)
            return try await apply(change.traced(traceParent), over: live)
        }
    }

    private func apply(_ change: RelayChange, over live: LiveChannels?) async throws(RelayError) -> [ChangeOutcome] {
        let writes = change.writes
        let outcomes: [ChangeOutcome]
        do {
            outcomes = writes.isEmpty ? [] : try await store.apply(writes)
        } catch {
            for effect in change.effectsUnlessApplied { await carryOut(effect, over: live) }
            if let refusal = change.refusalWhenConflict, (error as? StoreError) == .conflict { throw refusal }
            logger.error("store failure", metadata: ["error": "\(error)"])
            throw RelayError.unavailable
        }
        // Store work that answered was done, as a change that was applied.
        let applied = outcomes.allSatisfy { if case .answered = $0 { true } else { $0 == .applied } }
        if let refusal = change.refusalWhenStale, outcomes.contains(.stale) {
            for effect in change.effectsUnlessApplied { await carryOut(effect, over: live) }
            throw refusal
        }
        for effect in change.effects { await carryOut(effect, over: live) }
        for effect in applied ? change.effectsWhenApplied : change.effectsUnlessApplied {
            await carryOut(effect, over: live)
        }
        return outcomes
    }

    private func carryOut(_ effect: RelayEffect, over live: LiveChannels?) async {
        switch effect {
        case .countActivation:
            metrics.activations.increment()
        case .releaseHeld(let userID):
            await releaseHeld(userID: userID)
        case .wakeWebhooks:
            webhooksWritten.signal()
        case .appSaved(let app):
            let readAt = clock.now()
            appCache.withLock { $0[app.id] = (app, readAt) }
            onAppSaved(app)
        case .log(let message, let fields):
            logger.info("\(message)", metadata: fields.mapValues { .string($0) })
        case .count(.queued, let count):
            metrics.queued.increment(by: count)
        case .count(.skipped, let count):
            metrics.skipped.increment(by: count)
        case .handOff(let pushes, let claim):
            handOff?.handOff(pushes, reserved: claim)
        case .releaseClaim(let claim):
            handOff?.release(claim)
        case .wakeDispatchers:
            accepted()
        case .count(.messages, let count):
            metrics.messages.increment(by: count)
        case .count(.undeliverable(let outcome), let count):
            metrics.undeliverable(outcome).increment(by: count)
        case .count(.callbacksScheduled, let count):
            metrics.callbacks.increment(by: count)
        case .count(.callbackAnswers, let count):
            metrics.callbackAnswers.increment(by: count)
        case .count(.callbackPushes, let count):
            metrics.callbackPushes.increment(by: count)
        case .wakeCallbacks:
            callbacksDue.signal()
        case .wakeDeadlines:
            deadlinesArmed.signal()
        case .count(.callEnded(let state), let count):
            Counter(label: "herald_relay_calls_ended_total", dimensions: [("state", state.rawValue)]).increment(
                by: count
            )
        case .count(.receipts(let stage, let app, let network), let count):
            Counter(
                label: "herald_relay_receipts_total",
                dimensions: [("stage", stage.rawValue), ("app", app), ("network", network.rawValue)]
            ).increment(by: count)
        case .count(.escalations(let action, let app), let count):
            Counter(
                label: "herald_relay_push_escalations_total",
                dimensions: [("action", action.rawValue), ("app", app)]
            ).increment(by: count)
        case .count(.callsUnreported(let app), let count):
            Counter(label: "herald_relay_calls_unreported_total", dimensions: [("app", app)]).increment(by: count)
        case .observeShown(let app, let network, let milliseconds):
            Metrics.Timer(
                label: "herald_relay_push_shown_seconds",
                dimensions: [("app", app), ("network", network.rawValue)]
            ).recordMilliseconds(max(0, milliseconds))
        case .frame(let frame, let deviceID):
            _ = live?.send(frame, to: deviceID)
        }
    }
}
