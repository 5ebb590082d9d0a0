import Foundation
import GRDB
public import HeraldPush
public import HeraldStore

extension SQLiteStore {
    public func receipt(idempotencyKey: String) async throws -> [UInt8]? {
        try await read { db in
            try Data.fetchOne(
                db.cachedStatement(sql: "SELECT receipt FROM ingests WHERE idempotency_key = ?"),
                arguments: [idempotencyKey]
            ).map { [UInt8]($0) }
        }
    }

    /// Writes an ingest inside the caller's transaction (`StoreChange.accept`, a call's with its
    /// record, a held message's).
    static func insert(_ ingest: Ingest, _ db: Database) throws -> IngestOutcome {
        if let key = ingest.idempotencyKey {
            let seen = try db.cachedStatement(sql: "SELECT receipt FROM ingests WHERE idempotency_key = ?")
            if let receipt = try Data.fetchOne(seen, arguments: [key]) {
                return .duplicate(receipt: [UInt8](receipt))
            }
            let now = ingest.pushes.first?.createdAt ?? ingest.message?.createdAt ?? 0
            try db.cachedStatement(
                sql: "INSERT INTO ingests (idempotency_key, receipt, created_at) VALUES (?, ?, ?)"
            )
            .execute(arguments: [key, Data(ingest.receipt), now])
        }
        if let message = ingest.message {
            try db.cachedStatement(
                sql: """
                    INSERT INTO messages
                        (id, user_id, conversation, sealed_sender, sealed_text, created_at, expires_at,
                         sealed_push_options)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                message.id, message.userID, message.conversation, Data(message.sealedSender),
                Data(message.sealedText), message.createdAt, message.expiresAt,
                message.sealedPushOptions.map { Data($0) },
            ])
        }
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO outbox
                    (push_id, device_id, kind, subject_id, priority, network, topic, push_type, apns_priority,
                     apns_id, fcm_priority, collapse_id, attempts, next_attempt_at, expires_at, state,
                     last_reason, created_at, updated_at, waiting_since, now_or_never, claim_owner, claim_until,
                     trace_context)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        )
        let insertPayload = try db.cachedStatement(
            sql: "INSERT INTO outbox_payloads (push_id, payload) VALUES (?, ?)"
        )
        // The pushes the accepting node keeps are written claimed by it (`Ingest.claim`).
        for (push, claimOwner, claimUntil) in ingest.writtenPushes {
            let columns = StoredPayload(push.payload)
            try insert.execute(arguments: [
                push.pushID, push.deviceID, push.kind.rawValue, push.subjectID, push.priority,
                push.network.rawValue, columns.topic, columns.pushType, columns.apnsPriority, columns.apnsID,
                columns.fcmPriority, push.collapseID, push.attempts, push.nextAttemptAt, push.expiresAt,
                push.state.rawValue, push.lastReason, push.createdAt, push.updatedAt, push.waitingSince,
                push.nowOrNever, claimOwner, claimUntil, push.traceParent,
            ])
            try insertPayload.execute(arguments: [push.pushID, columns.body])
        }
        if !ingest.handovers.isEmpty {
            let handover = try db.cachedStatement(
                sql: "INSERT INTO live_handovers (message_id, device_id, node_id, deadline) VALUES (?, ?, ?, ?)"
            )
            for live in ingest.handovers {
                try handover.execute(arguments: [live.messageID, live.deviceID, live.nodeID, live.deadline])
            }
        }
        try Self.insert(ingest.deadlines, db)
        return .accepted
    }

    public func push(id: String) async throws -> OutboxEntry? {
        try await read { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: "SELECT \(OutboxRow.columns) FROM outbox WHERE push_id = ?",
                    arguments: [id]
                )?.record(OutboxRow.self)
            else { return nil }
            let body =
                try String.fetchOne(db, sql: "SELECT payload FROM outbox_payloads WHERE push_id = ?", arguments: [id])
            return try row.entry(body: body ?? "")
        }
    }

    /// A push's history without a row per step: the acceptance and the current state are the
    /// outbox row itself; the log holds only what would otherwise be lost, each time a push went
    /// back to the queue (with the provider's reason).
    public func deliveryLog(pushID: String) async throws -> [DeliveryEvent] {
        try await read { db in
            guard
                let history = try Row.fetchOne(
                    db,
                    sql: "SELECT \(PushHistory.columns) FROM outbox WHERE push_id = ?",
                    arguments: [pushID]
                )?.record(PushHistory.self)
            else { return [] }
            return history.events(of: pushID, requeues: try Self.requeues(of: pushID, db))
        }
    }

    /// The times `pushID` went back to the queue, in order.
    static func requeues(of pushID: String, _ db: Database) throws -> [DeliveryEvent] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT \(PushHistory.requeueColumns) FROM delivery_log WHERE push_id = ? ORDER BY id"
            ),
            arguments: [pushID]
        ).compactMap { row in
            var columns = SQLiteColumns(row)
            return try PushHistory.requeue(of: pushID, &columns)
        }
    }

    package func claimPushes(_ lease: StoreWork.Lease, networks: Set<PushNetwork>) async throws -> [ClaimedPush] {
        let (limit, owner, now, leaseUntil) = (lease.limit, lease.owner, lease.now, lease.until)
        if networks.isEmpty { return [] }
        // Every network: no condition on it, so the usual plan (the queue's order index). One
        // network: `network IN (?)`, which SQLite reads as `network = ?` and the network index
        // serves in the queue's order, so the claim stops at `limit` rows however many of the
        // other network's are queued.
        let every = networks.count == PushNetwork.allCases.count
        let wanted = every ? [] : PushNetwork.allCases.filter(networks.contains).map(\.rawValue)
        let events = webhooksConfigured.load(ordering: .relaxed)
        return try await write { db in
            let taken = try Self.take(db, limit: limit, owner: owner, now: now, until: leaseUntil, networks: wanted)
            return try Self.handOut(taken, db, now: now, events: events)
        }
    }

    /// Puts expired claims back in the queue, then takes the due pushes (of `networks`; none
    /// named: every network), in the order they are to be sent.
    private static func take(
        _ db: Database,
        limit: Int,
        owner: String,
        now: Int64,
        until leaseUntil: Int64,
        networks wanted: [String]
    ) throws -> [OutboxRow] {
        let condition =
            wanted.isEmpty ? "" : "AND network IN (" + wanted.map { _ in "?" }.joined(separator: ", ") + ")"
        // Claims whose owner never came back go back to the queue.
        try db.cachedStatement(
            sql: """
                UPDATE outbox SET state = 'queued', claim_owner = NULL, claim_until = NULL
                WHERE state = 'sending' AND claim_until < ?
                """
        ).execute(arguments: [now])
        // Pick and take in one statement: the due pushes, calls first, then the longest
        // waiting (the customer's wait where the push has one, else its time in the queue;
        // the queued indexes hold the same expression, so the order is read off them).
        var values: [any DatabaseValueConvertible] = [owner, leaseUntil, now, now]
        values += wanted as [any DatabaseValueConvertible]
        values.append(limit)
        return try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    UPDATE outbox SET state = 'sending', claim_owner = ?, claim_until = ?,
                        attempts = attempts + 1, updated_at = ?
                    WHERE push_id IN (
                        SELECT push_id FROM outbox WHERE state = 'queued' AND next_attempt_at <= ?
                            \(condition)
                        ORDER BY priority DESC, COALESCE(waiting_since, created_at) ASC LIMIT ?)
                    RETURNING \(OutboxRow.columns)
                    """
            ),
            arguments: StatementArguments(values)
        )
        .map { try $0.record(OutboxRow.self) }
        .sorted { ($0.priority, -$0.queuedSince, $0.pushID) > ($1.priority, -$1.queuedSince, $1.pushID) }
    }

    /// The pushes taken, each with its device's token and its app's credentials; one that
    /// cannot be sent is finished at once instead, its attempt given back.
    private static func handOut(_ rows: [OutboxRow], _ db: Database, now: Int64, events: Bool) throws -> [ClaimedPush] {
        let lookup = try db.cachedStatement(
            sql: """
                SELECT d.messaging_token, d.voip_token, d.token_dead_reason, d.apns_environment, a.apns_key,
                    a.fcm_account, d.notification_permission, d.web_push_keys
                FROM devices d LEFT JOIN apps a ON a.id = d.app_id WHERE d.id = ?
                """
        )
        let payload = try db.cachedStatement(sql: "SELECT payload FROM outbox_payloads WHERE push_id = ?")
        let giveBack = try db.cachedStatement(sql: "UPDATE outbox SET attempts = attempts - 1 WHERE push_id = ?")
        var devices: [String: Row?] = [:]
        var claimed: [ClaimedPush] = []
        claimed.reserveCapacity(rows.count)
        for entry in rows {
            let device: Row?
            if let known = devices[entry.deviceID] {
                device = known
            } else {
                device = try Row.fetchOne(lookup, arguments: [entry.deviceID])
                devices[entry.deviceID] = device
            }
            // VoIP pushes go to the PushKit token; the rest (alerts, FCM messages and calls)
            // to the messaging token.
            let token: String? = device.flatMap { entry.pushType == APNsPushType.voip.rawValue ? $0[1] : $0[0] }
            if let (state, reason) = ClaimedPush.unsendable(
                expiresAt: entry.expiresAt,
                now: now,
                device: device.map { ($0[6], $0[2]) },
                needsNotificationPermission: OutboxKind(rawValue: entry.kind)?.needsNotificationPermission == true,
                token: token
            ) {
                try giveBack.execute(arguments: [entry.pushID])
                try Self.finish(
                    db,
                    pushID: entry.pushID,
                    state: state,
                    reason: reason,
                    now: now,
                    events: state == .expired ? events : false
                )
            } else if let token {
                let body = try String.fetchOne(payload, arguments: [entry.pushID]) ?? ""
                claimed.append(
                    ClaimedPush(
                        entry: try entry.entry(body: body),
                        deviceToken: token,
                        apnsEnvironment: (device?[3] as String?).flatMap(APNsEnvironment.init(rawValue:)),
                        apnsKey: device?[4],
                        fcmAccount: device?[5],
                        webPushKeys: (device?[7] as Data?).flatMap { WebPushKeys(bytes: Array($0)) }
                    )
                )
            }
        }
        return claimed
    }

    /// Every batch in one transaction (one synced commit).
    package func complete(batches: [CompletionBatch]) async throws {
        if batches.allSatisfy(\.completions.isEmpty) { return }
        let events = webhooksConfigured.load(ordering: .relaxed)
        try await write { db in
            for batch in batches {
                try Self.complete(db, batch.completions, now: batch.now, events: events)
            }
        }
    }

    private static func complete(_ db: Database, _ completions: [PushCompletion], now: Int64, events: Bool) throws {
        let requeue = try db.cachedStatement(
            sql: """
                UPDATE outbox SET state = 'queued', next_attempt_at = ?, last_reason = ?, claim_owner = NULL,
                    claim_until = NULL, updated_at = ?
                WHERE push_id = ? AND state = 'sending'
                """
        )
        let giveBack = try db.cachedStatement(
            sql: "UPDATE outbox SET attempts = MAX(attempts - 1, 0) WHERE push_id = ?"
        )
        for completion in completions {
            switch completion.disposition {
            case .finish(let state):
                try Self.finish(
                    db,
                    pushID: completion.pushID,
                    state: state,
                    reason: completion.reason,
                    now: now,
                    events: events
                )
            case .retry(let at), .requeue(let at):
                // Only a push still claimed goes back: one finished meanwhile (a late write, after
                // an outage, of a push another node took when its lease ended) keeps its end.
                try requeue.execute(arguments: [at, completion.reason, now, completion.pushID])
                guard db.changesCount > 0 else { break }
                if case .requeue = completion.disposition { try giveBack.execute(arguments: [completion.pushID]) }
                try Self.log(db, pushID: completion.pushID, at: now, state: .queued, reason: completion.reason)
            }
            if let dead = completion.deadToken {
                try db.execute(
                    sql: """
                        UPDATE devices SET messaging_token = NULL, token_dead_reason = ?, updated_at = ?
                        WHERE id = ? AND messaging_token = ?
                        """,
                    arguments: [completion.reason, now, dead.deviceID, dead.token]
                )
                try db.execute(
                    sql: """
                        UPDATE devices SET voip_token = NULL, token_dead_reason = ?, updated_at = ?
                        WHERE id = ? AND voip_token = ?
                        """,
                    arguments: [completion.reason, now, dead.deviceID, dead.token]
                )
            }
        }
    }

    package func releaseClaims(of owner: String, now: Int64) async throws -> Int {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE outbox SET state = 'queued', claim_owner = NULL, claim_until = NULL, updated_at = ?
                    WHERE state = 'sending' AND claim_owner = ?
                    """,
                arguments: [now, owner]
            )
            return db.changesCount
        }
    }

    public func nextDueTime() async throws -> Int64? {
        try await read { db in
            try Int64.fetchOne(db, sql: "SELECT MIN(next_attempt_at) FROM outbox WHERE state = 'queued'")
        }
    }

    public func outboxCounts() async throws -> OutboxCounts {
        try await read { db in
            var counts: [PushState: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM outbox GROUP BY state") {
                if let state = PushState(rawValue: row["state"]) { counts[state] = row["n"] }
            }
            let oldest = try Int64.fetchOne(db, sql: "SELECT MIN(created_at) FROM outbox WHERE state = 'queued'")
            return OutboxCounts(byState: counts, oldestQueuedAt: oldest)
        }
    }

    public func queueCounts() async throws -> OutboxCounts {
        try await read { db in
            // The unary `+` keeps SQLite from walking outbox_by_age from the oldest push for the
            // first queued one: the partial outbox_queued_due index holds the queued rows alone.
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT (SELECT COUNT(*) FROM outbox WHERE state = 'queued'),
                        (SELECT COUNT(*) FROM outbox WHERE state = 'sending'),
                        (SELECT MIN(+created_at) FROM outbox WHERE state = 'queued')
                    """
            )
            let queued: Int = row?[0] ?? 0
            let sending: Int = row?[1] ?? 0
            return OutboxCounts(byState: [.queued: queued, .sending: sending], oldestQueuedAt: row?[2])
        }
    }

    public func queuedMessages(appID: String) async throws -> Int {
        try await read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM outbox JOIN devices ON devices.id = outbox.device_id
                    WHERE outbox.state = 'queued' AND outbox.kind = 'message' AND devices.app_id = ?
                    """,
                arguments: [appID]
            ) ?? 0
        }
    }

    /// Finishes a push; with `events` (some app has a webhook), writes its `push.<state>` event
    /// for the webhook of its device's app, if that app has one, in the same transaction, and
    /// for a callback's push delivered, the callback's `callback.pushed` (`CallbackStore`).
    private static func finish(
        _ db: Database,
        pushID: String,
        state: PushState,
        reason: String?,
        now: Int64,
        events: Bool
    ) throws {
        let statement = try db.cachedStatement(
            sql: """
                UPDATE outbox SET state = ?, last_reason = ?, claim_owner = NULL, claim_until = NULL, updated_at = ?
                WHERE push_id = ? RETURNING kind
                """
        )
        let kind = try String.fetchOne(statement, arguments: [state.rawValue, reason, now, pushID])
        guard events, Self.reportedStates.contains(state) else { return }
        try db.cachedStatement(sql: Self.pushEventSQL).execute(arguments: [now, now, now, pushID])
        // A callback's dialog is pushed when APNs or FCM accepted it, not when it was queued; the
        // kind the update returned spares every other push the statement.
        if state == .delivered, kind == OutboxKind.callback.rawValue {
            try db.cachedStatement(sql: Self.deliveredPushEventSQL).execute(arguments: [now, now, now, pushID])
        }
    }

    /// The final states a push's webhook event reports (`push.delivered` …); `skipped` is not one.
    static let reportedStates: Set<PushState> = [.delivered, .tokenDead, .failed, .expired]

    /// Writes a finished push's event when its device's app has a webhook: ids and states only.
    /// The event id is the type and the push id, so a push's final state is one event.
    static let pushEventSQL = """
        INSERT INTO webhook_events
            (id, app_id, type, ordering_key, data, created_at, next_attempt_at, updated_at, trace_context)
        SELECT 'push.' || o.state || ':' || o.push_id, d.app_id, 'push.' || o.state, 'push:' || o.push_id,
            json_object('device_id', o.device_id, 'kind', o.kind, 'push_id', o.push_id, 'reason', o.last_reason,
                'state', o.state, 'user_id', d.user_id),
            ?, ?, ?, o.trace_context
        FROM outbox o JOIN devices d ON d.id = o.device_id JOIN apps a ON a.id = d.app_id
        WHERE o.push_id = ? AND a.webhook_url IS NOT NULL
        ON CONFLICT (id) DO NOTHING
        """

    private static func log(_ db: Database, pushID: String, at: Int64, state: PushState, reason: String?) throws {
        let statement = try db.cachedStatement(
            sql: "INSERT INTO delivery_log (push_id, at, state, reason) VALUES (?, ?, ?, ?)"
        )
        try statement.execute(arguments: [pushID, at, state.rawValue, reason])
    }
}
