extension SandboxCore {
    // MARK: - FCM faults

    /// Queues an FCM fault for the next matching `messages:send` requests.
    public func inject(fcmFault fault: SandboxFCMFault) throws(SandboxError) {
        guard fault.count > 0 else { throw .invalidRequest("count must be at least 1") }
        if let status = fault.status, !(400...599).contains(status) {
            throw .invalidRequest("status must be an error status, between 400 and 599")
        }
        if let retryAfter = fault.retryAfter, !(0...86_400).contains(retryAfter) {
            throw .invalidRequest("retry_after must be between 0 and 86400 seconds")
        }
        state.withLock { $0.fcmFaults.append(fault) }
    }

    // MARK: - FCM inspection

    /// The FCM inspection log (sends and token requests), oldest first, optionally only the sends
    /// to one registration token, and only the last `limit`.
    public func fcmInspection(token: String? = nil, limit: Int? = nil) -> [SandboxFCMInspectionRecord] {
        let records = state.withLock { $0.fcmInspection.elements }
        let filtered = token.map { token in records.filter { $0.token == token } } ?? records
        return limit.map { Array(filtered.suffix(max(0, $0))) } ?? filtered
    }

    /// Forgets the FCM inspection log.
    public func clearFCMInspection() {
        state.withLock { $0.fcmInspection.removeAll() }
    }

    /// Every FCM inspection record made from now on, as it is made. For tests: a signal to wait on.
    public func fcmInspectionUpdates() -> AsyncStream<SandboxFCMInspectionRecord> {
        observe(\.fcmInspectionObservers)
    }

    /// Records `record` (numbering it), tells the observers, and returns the latency to add to
    /// the answer.
    func log(fcm record: inout SandboxFCMInspectionRecord) -> Duration {
        let (observers, latency) = state.withLock { state in (state.append(fcm: &record), state.latency) }
        for observer in observers { observer.yield(record) }
        return latency
    }
}

extension SandboxCore.State {
    /// Numbers and keeps `record`; returns the observers to tell once the lock is released.
    mutating func append(
        fcm record: inout SandboxFCMInspectionRecord
    ) -> [AsyncStream<SandboxFCMInspectionRecord>.Continuation] {
        fcmSequence += 1
        record.sequence = fcmSequence
        fcmInspection.append(record)
        return Array(fcmInspectionObservers.values)
    }
}
