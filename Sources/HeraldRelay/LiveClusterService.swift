public import HeraldDomain
public import HeraldStore
import Logging
public import ServiceLifecycle

/// A node's part in the live channels shared across nodes (`RelayConfiguration.live.nodeID`):
/// renews the lease of the channels it holds, delivers the messages other nodes hand it as soon
/// as the store says they came (and every `sweepInterval` in case a wake-up was lost), sends the
/// chat events other nodes announce on the channels it holds, and pushes
/// the messages whose acknowledgement deadline passed with no node answering them (a node that
/// died with them).
public struct LiveClusterService: Service {
    let relay: Relay
    let configuration: LiveConfiguration
    let store: any LiveSessionStore
    let clock: any HeraldClock

    /// `nil` when the relay's live channels are one process's (no node id).
    public init?(
        relay: Relay,
        configuration: LiveConfiguration,
        store: any LiveSessionStore,
        clock: any HeraldClock
    ) {
        guard configuration.nodeID != nil else { return nil }
        self.relay = relay
        self.configuration = configuration
        self.store = store
        self.clock = clock
    }

    public func run() async throws {
        guard let node = configuration.nodeID else { return }
        let ingest = relay.ingest
        let renewEvery = configuration.sessionLease / 3
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                let (arrivals, arrived) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
                group.addTask { await store.followLiveHandovers(nodeID: node) { arrived.yield() } }
                // Chat events other nodes recorded for the channels held here, one at a time so
                // their frames keep the order they were announced in.
                let (notices, heard) = AsyncStream.makeStream(
                    of: ChatEventNotice.self,
                    bufferingPolicy: .bufferingNewest(1024)
                )
                group.addTask {
                    await store.followChatEvents(nodeID: node) { heard.yield($0) }
                    heard.finish()
                }
                group.addTask {
                    for await notice in notices { await relay.transcripts.deliverAnnounced(notice) }
                }
                group.addTask {
                    for await _ in arrivals {
                        await ingest.deliverHandovers()
                        // Call stops wake the node on the same channel.
                        await relay.calls.deliverStops()
                    }
                }
                group.addTask {
                    var lastRenewal: ContinuousClock.Instant?
                    while !Task.isCancelled {
                        if lastRenewal.map({ ContinuousClock.now - $0 >= renewEvery }) ?? true {
                            do {
                                try await relay.liveDirectory.renew(sessionIDs: relay.live.sessionIDs, now: clock.now())
                                lastRenewal = .now
                            } catch {
                                relay.logger.warning(
                                    "cannot renew this node's live channels",
                                    metadata: ["error": "\(error)"]
                                )
                            }
                        }
                        arrived.yield()
                        await ingest.pushOverdueHandovers()
                        try? await Task.sleep(for: configuration.sweepInterval)
                    }
                    arrived.finish()
                }
            }
        }
    }
}
