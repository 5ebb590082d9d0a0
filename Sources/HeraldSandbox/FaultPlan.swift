/// A fault queued for a number of matching requests.
protocol CountedFault {
    /// How many matching requests still get it.
    var count: Int { get set }
}

extension SandboxFault: CountedFault {}
extension SandboxFCMFault: CountedFault {}

/// What an emulator was told besides its rules: faults queued for matching requests, latency on
/// every answer, and whether it is shutting down. The APNs and FCM emulators each keep one in
/// their state, so a request reads it under the same lock as the rest.
struct FaultPlan<Fault: CountedFault & Sendable>: Sendable {
    var faults: [Fault] = []
    var latency: Duration = .zero
    var shuttingDown = false

    /// Takes one use of the first queued fault that `matches`; a fault goes once used up.
    mutating func take(where matches: (Fault) -> Bool) -> Fault? {
        guard let index = faults.firstIndex(where: matches) else { return nil }
        let fault = faults[index]
        if fault.count <= 1 {
            faults.remove(at: index)
        } else {
            faults[index].count -= 1
        }
        return fault
    }
}

/// An emulator keeping a `FaultPlan` under its lock: latency, clearing and shutdown are the
/// same for APNs and FCM.
protocol FaultPlanning: Sendable {
    associatedtype Fault: CountedFault & Sendable

    /// Changes the plan under the emulator's lock.
    func changePlan(_ change: (inout FaultPlan<Fault>) -> Void)
}

extension FaultPlanning {
    /// Adds latency to every answer from now on; `.zero` removes it.
    func setLatency(_ latency: Duration) {
        changePlan { $0.latency = latency }
    }

    /// Removes every queued fault and the latency.
    func clearFaults() {
        changePlan {
            $0.faults.removeAll()
            $0.latency = .zero
        }
    }

    /// From now on every request is refused as the network refuses while it shuts down (APNs:
    /// 503 Shutdown; FCM: 503 UNAVAILABLE).
    func beginShutdown() {
        changePlan { $0.shuttingDown = true }
    }
}

/// Throws unless a queued fault's fields are in range: at least one use, an error status
/// (400–599), a `Retry-After` of at most a day.
func checkFault(count: Int, status: Int?, retryAfter: Int?) throws(SandboxError) {
    guard count > 0 else { throw .invalidRequest("count must be at least 1") }
    if let status, !(400...599).contains(status) {
        throw .invalidRequest("status must be an error status, between 400 and 599")
    }
    if let retryAfter, !(0...86_400).contains(retryAfter) {
        throw .invalidRequest("retry_after must be between 0 and 86400 seconds")
    }
}
