import HeraldCrypto
import HeraldMacros
import HeraldPush
import HeraldRelayAPI
import HeraldStore
public import ServiceLifecycle

extension RelayCallbacks {
    /// Claims the callbacks that need the relay now (due, or past their expiration) for `owner`
    /// and acts on each: queues the dialog's push to every device of the user, or expires it.
    /// Returns how many callbacks changed.
    ///
    /// A claim holds for `lease`; the push is queued in the same transaction as the callback's
    /// change, which succeeds only under the claim that is current, so a due callback is pushed
    /// once even when a node dies between claim and change (another node claims it after the
    /// lease) or two nodes run at once.
    public func pushDue(
        owner: String,
        lease: Duration = .seconds(30),
        limit: Int = 64
    ) async throws(RelayError)
        -> Int
    {
        let time = context.clock.now()
        let claimed = try await context.storing {
            try await $0.claimDueCallbacks(limit: limit, owner: owner, now: time, leaseUntil: time + lease.milliseconds)
        }
        return await context.act(on: claimed, "a due callback", id: \.id) { record throws(RelayError) in
            try await act(on: record, at: time)
        }
    }

    private func act(on record: CallbackRecord, at time: Int64) async throws(RelayError) -> Bool {
        var machine = CallbackMachine(record)
        // `due` is never refused.
        let actions = (try? machine.handle(.due(at: time))) ?? []
        let app = try await context.app(id: record.appID) ?? AppRecord(id: record.appID, teamID: "")
        var history: [CallbackHistoryEntry] = []
        var pushes: [OutboxEntry] = []
        var events: [WebhookEvent] = []
        var pushed = 0
        for action in actions {
            switch action {
            case .push(let sequence):
                // Its `callback.pushed` is not written here but by the store, when APNs or FCM
                // accepts one of these pushes (or the device answers first): queued is not pushed.
                pushes = try await callbackPushes(for: record, app: app, sequence: sequence, at: time)
                pushed = 1
                history.append(CallbackHistoryEntry(at: time, event: .pushed, state: .pushed, sequence: sequence))
            case .report(.callbackExpired):
                history.append(CallbackHistoryEntry(at: time, event: .expired, state: .expired))
                let data = CallbackEventData(
                    callbackID: record.id,
                    userID: record.userID,
                    state: CallbackState.expired.rawValue
                )
                events += WebhookEvent.reporting(
                    app: app,
                    .callbackExpired,
                    orderingKey: "callback:" + record.id,
                    data: data,
                    at: time
                )
            case .report, .scheduleNextPush:
                break
            }
        }
        // Nothing to do (another node acted first): the change still releases the claim.
        let change = CallbackChange(
            callbackID: record.id,
            expectedVersion: record.version,
            state: machine.state,
            dueAt: machine.dueAt,
            pushed: pushed,
            history: history,
            pushes: pushes,
            events: events,
            now: time
        )
        guard try await context.commit(CallbackPlanner.due(change)) == [.applied] else { return false }
        return !history.isEmpty
    }

    /// The dialog's push, sealed for each device of the user in the callback's app that has a
    /// messaging token; priority 10 on APNs (a time-sensitive alert), HIGH on FCM.
    private func callbackPushes(
        for record: CallbackRecord,
        app: AppRecord,
        sequence: Int,
        at time: Int64
    )
        async throws(RelayError) -> [OutboxEntry]
    {
        let sealed = try open(record)
        let content = CallbackContent(
            callbackID: record.id,
            sequence: UInt16(clamping: sequence),
            serviceID: sealed.serviceID,
            dialog: sealed.dialog,
            pushedAt: time
        )
        let recipients = try await context.storing { try await $0.recipients(userID: record.userID) }
        var entries: [OutboxEntry] = []
        for device in recipients.map(\.device)
        where device.appID == record.appID && context.isPushable(device) && device.messagingToken != nil {
            let entry: OutboxEntry
            do {
                entry = try context.sealedPush(
                    .callback(content),
                    for: device,
                    app: app,
                    at: time,
                    expiresAt: record.expiresAt
                )
            } catch let error as RelayError {
                throw error
            } catch {
                // Checked when scheduled: only an app whose alert texts grew since can get here.
                context.logger.error(
                    "a callback's dialog no longer fits in a push",
                    metadata: ["callback": "\(record.id)", "device": "\(device.id)"]
                )
                continue
            }
            entries.append(context.permitted(entry, for: device))
        }
        return entries
    }

    /// Deletes the callbacks that finished longer ago than the relay keeps messages, with their
    /// history; returns how many.
    public func purgeFinished() async throws(RelayError) -> Int {
        let cut = context.clock.now() - context.configuration.messageRetention.milliseconds
        return try await context.storing { try await $0.deleteFinishedCallbacks(before: cut) }
    }
}

/// Pushes due callbacks and expires unanswered ones, as a service: on a callback scheduled or
/// snoozed on this node at once, at the next due time on the relay's clock otherwise, and every
/// `poll` (real time) for what other nodes wrote. Stops on graceful shutdown (a claim it held lapses and another node, or the next
/// start, takes it).
@MemberwiseInit
public struct CallbackScheduler: Service {
    let callbacks: RelayCallbacks
    /// Claims are held under this owner (the node's id).
    public let owner: String
    /// The longest wait between two looks at the store.
    public var poll: Duration = .seconds(1)

    public func run() async throws {
        let (callbacks, owner, context) = (callbacks, owner, callbacks.context)
        await context.runDue("due callbacks", wake: callbacks.signal, poll: poll) { () throws(RelayError) in
            try await callbacks.pushDue(owner: owner)
        } next: {
            context.ahead((try? await context.store.nextCallbackDueTime()) ?? nil)
        }
    }
}
