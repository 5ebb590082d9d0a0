import Foundation
public import HeraldCrypto
public import HeraldDispatch
public import HeraldDomain
import HeraldRelayAPI
public import HeraldStore
public import HeraldTracing
public import Logging

/// The relay: activation with key agreement, tokens, presence, and ingest of messages, calls and
/// chat events into the durable outbox, in three parts over one shared context.
///
/// Transport-free: the HTTP API calls the parts after authenticating the caller. Every ingest
/// returns only after the store committed it; `onAccepted` then tells the dispatcher.
public final class Relay: Sendable {
    /// Apps, activation and keys, devices and their tokens, presence.
    public let activation: RelayActivation
    /// Messages, calls, broadcasts, message fetch, push status, counts, purge.
    public let ingest: RelayIngest
    /// Chat events, disconnect and connect, transcript reads, the delayed first pushes.
    public let transcripts: RelayTranscripts
    /// The delivery state of the events for the apps' webhooks.
    public let webhooks: RelayWebhooks
    /// The phones' receipts for the pushes they were sent.
    public let receipts: RelayReceipts
    /// The pushes' deadlines: escalations and the CallKit guard (`DeadlineScheduler` runs them).
    public let deadlines: RelayDeadlines
    /// A call's life after its VoIP push: ringing, answer, decline, cancel, missed.
    public let calls: RelayCalls
    /// Callbacks: scheduling, the due pushes (`CallbackScheduler`), answers, state and history.
    public let callbacks: RelayCallbacks
    /// The backends' API keys and the audit log.
    public let keys: RelayKeys
    /// The apps' and keys' message quotas on this node.
    public let quotas: QuotaBook
    /// The apps' caps on queued messages.
    public let queueCaps: QueueCaps
    /// The live channels of apps in the foreground this node holds.
    public let live: LiveChannels
    /// Where every node's live channels are known (`RelayConfiguration.live.nodeID`).
    public let liveDirectory: any LiveSessionDirectory
    /// The chats' delayed first pushes and the live channels' acknowledgement deadlines: a
    /// service to run beside the relay (`RelayNode` has it among its own); none fires without it.
    public let timers: RelayTimers
    /// The spans of each push's trace (off unless configured): the HTTP API's ingest spans use it.
    public var tracing: PushTracing { context.tracing }
    /// Where the relay logs; the HTTP API logs its own events here too.
    public let logger: Logger
    let context: RelayContext

    /// Admits `count` messages of `caller` against its key's and its app's quotas and its app's
    /// cap on queued messages, now; a 429 (`tooManyRequests`) when one is spent.
    public func admit(_ caller: Caller, messages count: Int) async throws(RelayError) {
        let now = context.clock.now()
        if let app = caller.appID {
            try await queueCaps.admit(app: app, count: count, at: now) { app throws(RelayError) in
                try await context.storing { try await $0.queuedMessages(appID: app) }
            }
        }
        try quotas.admit(caller, count: count, at: now)
    }

    /// - Parameters:
    ///   - clock: the relay's one clock: what it stamps, and what `timers` (the chat delays, the
    ///     live channels' acknowledgement timeouts) and the callback scheduler wait on. Tests
    ///     pass a `TestClock` they move.
    ///   - onAccepted: called after each ingest that queued pushes (wakes the dispatcher).
    ///   - onAppSaved: called after an app was added or changed (say, to register it with a sandbox).
    ///   - handOff: this node's dispatcher: the pushes an ingest can hand it in memory are written
    ///     claimed by it and sent without a claim statement (nil: every push is claimed).
    ///   - tracing: the spans of each push's trace (docs/tracing.md); off by default.
    public init(
        configuration: RelayConfiguration = RelayConfiguration(),
        store: any HeraldStore,
        masterKey: MasterKey,
        logger: Logger,
        clock: any HeraldClock = WallClock(),
        onAccepted: @escaping @Sendable () -> Void = {},
        onAppSaved: @escaping @Sendable (AppRecord) -> Void = { _ in },
        live: LiveChannels? = nil,
        handOff: (any PushHandOff)? = nil,
        tracing: PushTracing = .off
    ) {
        let live = live ?? LiveChannels(ackTimeout: configuration.live.ackTimeout)
        let directory: any LiveSessionDirectory =
            if let node = configuration.live.nodeID {
                SharedLiveDirectory(store: store, nodeID: node, lease: configuration.live.sessionLease, logger: logger)
            } else {
                ProcessLiveDirectory()
            }
        let context = RelayContext(
            configuration: configuration,
            store: store,
            masterKey: masterKey,
            logger: logger,
            clock: clock,
            onAccepted: onAccepted,
            onAppSaved: onAppSaved,
            handOff: handOff,
            tracing: tracing
        )
        let ingest = RelayIngest(context: context, live: live, directory: directory)
        let timers = RelayTimers(clock: clock)
        self.activation = RelayActivation(context: context)
        self.ingest = ingest
        self.transcripts = RelayTranscripts(context: context, live: live, directory: directory, timers: timers)
        self.webhooks = RelayWebhooks(context: context)
        self.receipts = RelayReceipts(context: context)
        self.deadlines = RelayDeadlines(context: context, ingest: ingest)
        self.calls = RelayCalls(context: context, live: live, directory: directory)
        self.callbacks = RelayCallbacks(context: context)
        self.keys = RelayKeys(store: store, clock: clock, logger: logger)
        self.quotas = QuotaBook(apps: configuration.quotas.apps, defaultQuota: configuration.quotas.defaultQuota)
        self.queueCaps = QueueCaps(apps: configuration.quotas.appCaps, defaultCap: configuration.quotas.defaultCap)
        self.live = live
        self.liveDirectory = directory
        self.timers = timers
        self.logger = logger
        self.context = context
        live.attach(clock: clock, timers: timers, directory: directory) { [weak ingest] deviceID, messageID in
            await ingest?.unacknowledged(messageID: messageID, deviceID: deviceID)
        }
    }
}

extension Relay {
    /// Seals the senders (of messages, of chat events) an older version stored in the clear, in
    /// batches, until none is left; returns how many were sealed. Run at start, before the API
    /// listens: the store cannot do it itself (only the relay holds the master key), and until
    /// then those records cannot be read back.
    public func sealClearSenders() async throws(RelayError) -> Int {
        var sealed = 0
        while true {
            let batch = try await context.storing { try await $0.clearSenders(limit: 500) }
            if batch.isEmpty { return sealed }
            var replacements: [ClearSender.Record: [UInt8]] = [:]
            for clear in batch {
                let party = Party(id: clear.senderID, name: clear.senderName)
                switch clear.record {
                case .message(let id):
                    replacements[clear.record] = context.sealSender(party, messageID: id)
                case .transcriptEvent(let conversation, _):
                    replacements[clear.record] = context.sealAuthor(party, conversation: conversation, at: clear.at)
                }
            }
            let sealedBatch = replacements
            try await context.storing { try await $0.sealSenders(sealedBatch) }
            let left = try await context.storing { try await $0.clearSenders(limit: batch.count) }
            // A store that kept answering the same senders would loop for ever: stop and say so.
            guard Set(left.map(\.record)).isDisjoint(with: replacements.keys) else {
                throw RelayError.unavailable.with(detail: "the store did not keep the sealed senders")
            }
            sealed += batch.count
        }
    }
}
