import HeraldBatching
import ServiceLifecycle

// What the relay's durable timers share (callbacks, push deadlines): a node claims the rows due
// under a lease, acts on each, and waits for the next.
extension RelayContext {
    /// Acts on each row a claim took for this node; a row whose action fails is logged and left
    /// under its claim (claimed again once its lease ends). Answers how many acted.
    func act<Row: Sendable>(
        on claimed: [Row],
        _ what: String,
        id: (Row) -> String,
        _ action: (Row) async throws(RelayError) -> Bool
    ) async -> Int {
        var acted = 0
        for row in claimed {
            do {
                if try await action(row) { acted += 1 }
            } catch {
                logger.error("cannot act on \(what)", metadata: ["id": "\(id(row))", "error": "\(error)"])
            }
        }
        return acted
    }

    /// Runs until cancelled or a graceful shutdown: acts on what is due with `due` (again while
    /// it acts on something), then waits until `next` on the relay's clock (so a test clock's
    /// advance wakes it), until `wake` is signalled, or for `poll` of real time (what other nodes
    /// wrote). With nothing due it does not sleep on the relay's clock at all.
    func runDue(
        _ what: String,
        wake: WakeSignal,
        poll: Duration,
        due: @escaping @Sendable () async throws(RelayError) -> Int,
        next: @escaping @Sendable () async -> Int64?
    ) async {
        let clock = self.clock
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    while try await due() > 0 {}
                } catch {
                    self.logger.warning("cannot act on \(what)", metadata: ["error": "\(error)"])
                }
                let deadline = await next()
                await withTaskGroup(of: Void.self) { group in
                    if let deadline { group.addTask { try? await clock.sleep(until: deadline) } }
                    group.addTask { await wake.wait(timeout: poll) }
                    await group.next()
                    group.cancelAll()
                }
            }
        }
    }

    /// When the next row of a durable timer is due, if one waits and its time is still ahead (a
    /// time already past is a row another claim holds).
    func ahead(_ due: Int64?) -> Int64? {
        guard let due, due > clock.now() else { return nil }
        return due
    }
}
