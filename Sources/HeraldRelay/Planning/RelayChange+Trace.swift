import HeraldStore

extension RelayChange {
    /// Whether the change queues pushes (an ingest, a call): the writes that carry a trace.
    var queuesPushes: Bool { writes.contains(where: \.queuesPushes) }

    /// The change with `traceParent` on every push it queues and every push it hands this
    /// node's dispatcher, so each push's claim, attempts, receipts and webhook events join the
    /// trace of the request that made it (docs/tracing.md). Only built while tracing is on.
    func traced(_ traceParent: String) -> RelayChange {
        var change = self
        change.writes = writes.map { $0.traced(traceParent) }
        change.effects = effects.map { $0.traced(traceParent) }
        change.effectsWhenApplied = effectsWhenApplied.map { $0.traced(traceParent) }
        return change
    }
}

extension StoreChange {
    /// Whether the write queues pushes: an ingest's, a call's, or those a settled deadline writes.
    fileprivate var queuesPushes: Bool {
        switch self {
        case .accept(let ingest), .acceptCall(let ingest, _): !ingest.pushes.isEmpty
        case .settleDeadline(_, _, let then): then.contains(where: \.queuesPushes)
        default: false
        }
    }

    fileprivate func traced(_ traceParent: String) -> StoreChange {
        switch self {
        case .accept(let ingest): .accept(ingest.traced(traceParent))
        case .acceptCall(let ingest, let call): .acceptCall(ingest.traced(traceParent), call: call)
        case .settleDeadline(let deadline, let owner, let then):
            .settleDeadline(deadline, owner: owner, then: then.map { $0.traced(traceParent) })
        default: self
        }
    }
}

extension RelayEffect {
    fileprivate func traced(_ traceParent: String) -> RelayEffect {
        guard case .handOff(var pushes, let claim) = self else { return self }
        for index in pushes.indices { pushes[index].entry.traceParent = traceParent }
        return .handOff(pushes, claim)
    }
}

extension Ingest {
    fileprivate func traced(_ traceParent: String) -> Ingest {
        var ingest = self
        for index in ingest.pushes.indices { ingest.pushes[index].traceParent = traceParent }
        return ingest
    }
}
