public import ServiceLifecycle

/// Ends as missed the calls nobody answered within their time to live, on every node: a node
/// claims a due call under a lease (so one node ends it, and another takes over if that node
/// died), ends it, and queues the missed-call alerts. It wakes at the next call's due time, and
/// at least every `interval` (for calls other nodes accepted since, and a clock moved by hand).
public struct CallTimerService: Service {
    let relay: Relay
    let interval: Duration

    public init(relay: Relay, interval: Duration = .seconds(1)) {
        self.relay = relay
        self.interval = interval
    }

    public func run() async throws {
        let calls = relay.calls
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await calls.expireDue()
                let now = calls.context.clock.now()
                let next = min(await calls.nextDue() ?? Int64.max, now + interval.milliseconds)
                // Real time, not the relay's timers: a call's due time is checked again within
                // `interval` whatever moves the relay's clock (tests move it by hand).
                do {
                    try await Task.sleep(for: .milliseconds(max(next - now, 1)))
                } catch {
                    return
                }
            }
        }
    }
}
