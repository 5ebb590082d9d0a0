import HeraldStore
import Logging

extension RelayContext {
    /// Carries out a planner's change: its writes in one transaction, then its effects. The one
    /// place a planned relay operation does I/O.
    ///
    /// Answers the store's outcome per write; throws the change's `refusalWhenStale` when a write
    /// found its row gone, after the transaction (which wrote nothing for that write).
    @discardableResult
    func commit(_ change: RelayChange) async throws(RelayError) -> [ChangeOutcome] {
        let writes = change.writes
        let outcomes = writes.isEmpty ? [] : try await storing { try await $0.apply(writes) }
        if let refusal = change.refusalWhenStale, outcomes.contains(.stale) { throw refusal }
        for effect in change.effects { await carryOut(effect) }
        if outcomes.allSatisfy({ $0 == .applied }) {
            for effect in change.effectsWhenApplied { await carryOut(effect) }
        }
        return outcomes
    }

    private func carryOut(_ effect: RelayEffect) async {
        switch effect {
        case .countActivation:
            metrics.activations.increment()
        case .releaseHeld(let userID):
            await releaseHeld(userID: userID)
        case .wakeWebhooks:
            webhooksWritten.signal()
        case .appSaved(let app):
            let readAt = now()
            appCache.withLock { $0[app.id] = (app, readAt) }
            onAppSaved(app)
        case .log(let message, let fields):
            logger.info("\(message)", metadata: fields.mapValues { .string($0) })
        }
    }
}
