import HeraldBatching
public import HeraldPush
public import HeraldStore
import NIOCore
import PostgresNIO

extension PostgresStore {
    /// The columns `entry(_:)` reads, in its order: the outbox row (alias `o`), then the payload's
    /// body (alias `p`, joined).
    static let outboxColumns =
        OutboxRow.columnNames.map { "o." + $0 }.joined(separator: ", ") + ", COALESCE(p.payload, '')"

    static func entry(_ row: PostgresRow) throws -> OutboxEntry {
        var columns = Columns(row)
        return try entry(&columns)
    }

    /// Reads `outboxColumns` and leaves `columns` at the next one.
    static func entry(_ columns: inout Columns) throws -> OutboxEntry {
        let row = try OutboxRow(columns: &columns)
        return try row.entry(body: try columns.text())
    }

    // MARK: Ingest

    /// `StoreChange.accept` alone: the relay's most frequent write joins one batched statement
    /// with the ingests beside it (`AcceptBatchStatement`), committed on its own.
    func acceptBatched(_ ingest: Ingest) async throws -> ChangeOutcome {
        if ingest.writesNothing { return .applied }
        return try await batched(
            ingests,
            ingest,
            "accept ingests",
            Batcher.eachAloneOnFailure { [self] batch in
                let rows = try await rows("accept ingests", prepared: AcceptBatchStatement(ingests: batch))
                var outcomes = Array(repeating: ChangeOutcome.duplicate, count: batch.count)
                do {
                    for row in rows {
                        let (position, stale) = try row.decode((Int64, Bool).self)
                        outcomes[Int(position)] = stale ? .stale : .applied
                    }
                } catch {
                    throw StoreError.corrupt.with(detail: "accept ingests: \(error)")
                }
                var after = AfterCommit()
                for (ingest, outcome) in zip(batch, outcomes) { after.note(ingest, outcome) }
                await announce(after)
                return outcomes
            }
        )
    }

    /// `StoreChange.accept` inside the caller's transaction (a batch of changes, a call's ingest).
    static func accept(
        _ ingest: Ingest,
        on connection: PostgresConnection,
        logger: Logger,
        after: inout AfterCommit
    ) async throws -> ChangeOutcome {
        if ingest.writesNothing { return .applied }
        var outcome = ChangeOutcome.duplicate
        for try await row in try await connection.execute(AcceptBatchStatement(ingests: [ingest]), logger: logger) {
            outcome = try row.decode((Int64, Bool).self).1 ? .stale : .applied
        }
        if outcome == .applied { try await insert(ingest.deadlines, on: connection, logger: logger) }
        after.note(ingest, outcome)
        return outcome
    }

    public func receipt(idempotencyKey: String) async throws -> [UInt8]? {
        let seen = try await rows(
            "read an ingest's receipt",
            "SELECT receipt FROM ingests WHERE idempotency_key = \(idempotencyKey)"
        )
        guard let row = seen.first else { return nil }
        do {
            var columns = Columns(row)
            return try columns.bytes()
        } catch {
            throw StoreError.corrupt.with(detail: "read an ingest's receipt: \(error)")
        }
    }

    // MARK: Outbox

    public func push(id: String) async throws -> OutboxEntry? {
        try await rows(
            "read a push",
            """
            SELECT \(unescaped: Self.outboxColumns)
            FROM outbox o LEFT JOIN outbox_payloads p ON p.push_id = o.push_id WHERE o.push_id = \(id)
            """
        ).first.map(Self.entry(_:))
    }

    /// As on SQLite: the acceptance and the current state are the outbox row itself; the log
    /// holds each return to the queue.
    public func deliveryLog(pushID: String) async throws -> [DeliveryEvent] {
        try await transaction("read a push's history") { [logger] connection -> [DeliveryEvent] in
            let rows = try await connection.run(
                "SELECT \(unescaped: PushHistory.columns) FROM outbox WHERE push_id = \(pushID)",
                logger: logger
            )
            guard let history = try rows.first?.record(PushHistory.self) else { return [] }
            let requeues = try await connection.run(Self.requeuesQuery(of: pushID), logger: logger)
            return history.events(of: pushID, requeues: try Self.requeues(of: pushID, requeues))
        }
    }

    /// The times `pushID` went back to the queue, in order (read by `requeues(of:_:)`).
    static func requeuesQuery(of pushID: String) -> PostgresQuery {
        "SELECT \(unescaped: PushHistory.requeueColumns) FROM delivery_log WHERE push_id = \(pushID) ORDER BY id"
    }

    static func requeues(of pushID: String, _ rows: [PostgresRow]) throws -> [DeliveryEvent] {
        try rows.compactMap { row in
            var columns = Columns(row)
            return try PushHistory.requeue(of: pushID, &columns)
        }
    }

    package func claimPushes(_ lease: StoreWork.Lease, networks: Set<PushNetwork>) async throws -> [ClaimedPush] {
        let (limit, owner, now, leaseUntil) = (lease.limit, lease.owner, lease.now, lease.until)
        if networks.isEmpty { return [] }
        let wanted = PushNetwork.allCases.filter(networks.contains).map(\.rawValue)
        // Claims whose owner never came back go back to the queue first; on its own, as every
        // statement here: each is atomic, and none needs another's locks held. SKIP LOCKED: a
        // lease another node is putting back or finishing right now is left to it.
        _ = try await rows("take back expired claims", plannedEachTime: ExpiredClaimsStatement(now: now))
        // Pick and take in one statement, with each push's device tokens: the due pushes, calls
        // first, then the oldest. Rows another node is taking at this moment are skipped, not
        // waited for, so nodes never queue behind each other's claims and no push is held by two.
        let taken = try await rows(
            "claim pushes",
            plannedEachTime: ClaimStatement(
                now: now,
                networks: wanted,
                limit: Int64(limit),
                owner: owner,
                leaseUntil: leaseUntil
            )
        )
        let entries = try Self.claimedRows(taken)
        var claimed: [ClaimedPush] = []
        claimed.reserveCapacity(entries.count)
        var unsendable: (ids: [String], states: [String], reasons: [String]) = ([], [], [])
        for (entry, device) in entries {
            // VoIP pushes go to the PushKit token; the rest (alerts, FCM messages and calls)
            // to the messaging token.
            let token = device.flatMap { entry.usesVoIPToken ? $0.voip : $0.messaging }
            if let (state, reason) = ClaimedPush.unsendable(
                expiresAt: entry.expiresAt,
                now: now,
                device: device.map { ($0.notifications, $0.deadReason) },
                needsNotificationPermission: entry.kind.needsNotificationPermission,
                token: token
            ) {
                unsendable.ids.append(entry.pushID)
                unsendable.states.append(state.rawValue)
                unsendable.reasons.append(reason)
            } else if let token {
                claimed.append(
                    ClaimedPush(
                        entry: entry,
                        deviceToken: token,
                        apnsEnvironment: device?.apnsEnvironment.flatMap(APNsEnvironment.init(rawValue:)),
                        apnsKey: device?.apnsKey,
                        fcmAccount: device?.fcmAccount,
                        webPushKeys: device?.webPushKeys.flatMap(WebPushKeys.init(bytes:))
                    )
                )
            }
        }
        if !unsendable.ids.isEmpty {
            // Finished instead of sent: the claim's attempt is given back. Only while the claim
            // is still this node's (it is, unless its lease ran out in between).
            _ = try await rows(
                "finish unsendable pushes",
                """
                WITH done AS (
                    UPDATE outbox o SET state = u.state, last_reason = u.reason, attempts = o.attempts - 1,
                        claim_owner = NULL, claim_until = NULL, updated_at = \(now)
                    FROM unnest(\(unsendable.ids)::text[], \(unsendable.states)::text[], \(unsendable.reasons)::text[])
                        AS u(id, state, reason)
                    WHERE o.push_id = u.id AND o.state = 'sending' AND o.claim_owner = \(owner)
                    RETURNING o.push_id, o.device_id, o.kind, o.state, o.last_reason, o.trace_context
                )
                \(unescaped: PushEvents.insert(now: String(now)))
                """
            )
        }
        return claimed
    }

    /// The claim's rows as entries, each with its device (nil: the device is gone), in the
    /// order they are to be sent: calls first, then the longest waiting.
    private static func claimedRows(
        _ taken: [PostgresRow]
    ) throws -> [(entry: OutboxEntry, device: ClaimStatement.Device?)] {
        var entries: [(entry: OutboxEntry, device: ClaimStatement.Device?)] = []
        do {
            entries = try taken.map { row in
                var columns = Columns(row)
                let entry = try Self.entry(&columns)
                let known: Bool = try columns.next()
                let messaging: String? = try columns.next()
                let voip: String? = try columns.next()
                let dead: String? = try columns.next()
                let device = ClaimStatement.Device(
                    messaging: messaging,
                    voip: voip,
                    deadReason: dead,
                    apnsEnvironment: try columns.next(),
                    apnsKey: try columns.next(),
                    fcmAccount: try columns.next(),
                    notifications: try columns.next(),
                    webPushKeys: try columns.next(ByteBuffer?.self).map { Array($0.readableBytesView) }
                )
                return (entry, known ? device : nil)
            }
        } catch {
            throw StoreError.corrupt.with(detail: "claim pushes: \(error)")
        }
        entries.sort {
            ($0.entry.priority, -$0.entry.queuedSince, $0.entry.pushID)
                > ($1.entry.priority, -$1.entry.queuedSince, $1.entry.pushID)
        }
        return entries
    }

    package func complete(batches: [CompletionBatch]) async throws {
        if batches.allSatisfy(\.completions.isEmpty) { return }
        if batches.allSatisfy({ $0.completions.allSatisfy(\.onlyFinishes) }) {
            // The usual write: every push finished, each batch at its time, in one statement
            // (atomic on its own).
            var statement = FinishStatement()
            for batch in batches { statement.append(batch.completions, at: batch.now) }
            _ = try await rows("record push outcomes", plannedEachTime: statement)
            return
        }
        try await transaction("record push outcomes") { [logger] connection in
            for batch in batches {
                try await Self.record(batch.completions, now: batch.now, on: connection, logger: logger)
            }
        }
    }

    /// Writes one batch's outcomes within a transaction.
    private static func record(
        _ completions: [PushCompletion],
        now: Int64,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        var finished = FinishStatement()
        finished.append(completions, at: now)
        var retried = Requeues()
        var dead = DeadTokens()
        for completion in completions {
            retried.add(completion)
            dead.add(completion)
        }
        let finishing = try PostgresQuery(unsafeSQL: FinishStatement.sql, binds: finished.makeBindings())
        // Arrays carry no NULL through postgres-nio's encoders: a reason is nil where its flag
        // says so.
        if !finished.ids.isEmpty {
            try await connection.run(finishing, logger: logger)
        }
        if !retried.ids.isEmpty {
            // Only a push still claimed goes back (and is logged): one finished meanwhile (a late
            // write, after an outage, of a push another node took when its lease ended) keeps its end.
            try await connection.run(
                """
                WITH back AS (
                    UPDATE outbox o SET state = 'queued', next_attempt_at = u.at,
                        last_reason = CASE WHEN u.has THEN u.reason END, claim_owner = NULL, claim_until = NULL,
                        attempts = CASE WHEN u.back THEN o.attempts - 1 ELSE o.attempts END, updated_at = \(now)
                    FROM unnest(\(retried.ids)::text[], \(retried.at)::bigint[], \(retried.reasons)::text[],
                        \(retried.hasReason)::bool[], \(retried.giveBack)::bool[]) AS u(id, at, reason, has, back)
                    WHERE o.push_id = u.id AND o.state = 'sending'
                    RETURNING o.push_id
                )
                INSERT INTO delivery_log (push_id, at, state, reason)
                SELECT u.id, \(now), 'queued', CASE WHEN u.has THEN u.reason END
                FROM unnest(\(retried.ids)::text[], \(retried.reasons)::text[], \(retried.hasReason)::bool[])
                    WITH ORDINALITY AS u(id, reason, has, n)
                WHERE u.id IN (SELECT push_id FROM back)
                ORDER BY u.n
                """,
                logger: logger
            )
        }
        if !dead.devices.isEmpty {
            try await clear(dead, now: now, on: connection, logger: logger)
        }
    }

    /// Clears the dead tokens. Only where the device still has that token: a newer one is kept.
    /// Two statements, not one setting both columns: a device whose messaging and VoIP tokens
    /// both died in one batch is listed twice, and an UPDATE … FROM changes a row once.
    private static func clear(
        _ dead: DeadTokens,
        now: Int64,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        for column in ["messaging_token", "voip_token"] {
            try await connection.run(
                """
                UPDATE devices d SET \(unescaped: column) = NULL,
                    token_dead_reason = CASE WHEN u.has THEN u.reason END, updated_at = \(now)
                FROM unnest(\(dead.devices)::text[], \(dead.tokens)::text[], \(dead.reasons)::text[],
                    \(dead.hasReason)::bool[]) AS u(id, token, reason, has)
                WHERE d.id = u.id AND d.\(unescaped: column) = u.token
                """,
                logger: logger
            )
        }
    }

    package func releaseClaims(of owner: String, now: Int64) async throws -> Int {
        let released = try await transaction("release claims") { [logger] connection in
            try await connection.run(
                """
                UPDATE outbox SET state = 'queued', claim_owner = NULL, claim_until = NULL, updated_at = \(now)
                WHERE state = 'sending' AND claim_owner = \(owner)
                RETURNING 1
                """,
                logger: logger
            ).count
        }
        if released > 0 { announceQueued() }
        return released
    }

    public func nextDueTime() async throws -> Int64? {
        let rows = try await rows(
            "read the next due time",
            "SELECT MIN(next_attempt_at) FROM outbox WHERE state = 'queued'"
        )
        do {
            return try rows.first?.decode(Int64?.self) ?? nil
        } catch {
            throw StoreError.corrupt.with(detail: "read the next due time: \(error)")
        }
    }

    public func queuedMessages(appID: String) async throws -> Int {
        let rows = try await rows(
            "count an app's queued messages",
            """
            SELECT COUNT(*) FROM outbox JOIN devices ON devices.id = outbox.device_id
            WHERE outbox.state = 'queued' AND outbox.kind = 'message' AND devices.app_id = \(appID)
            """
        )
        do {
            return Int(try rows.first?.decode(Int64.self) ?? 0)
        } catch {
            throw StoreError.corrupt.with(detail: "count an app's queued messages: \(error)")
        }
    }

    public func outboxCounts() async throws -> OutboxCounts {
        // One statement, so the count and the oldest age are of one snapshot.
        let rows = try await rows(
            "count the outbox",
            """
            SELECT state, COUNT(*), MIN(created_at) FILTER (WHERE state = 'queued')
            FROM outbox GROUP BY state
            """
        )
        var counts: [PushState: Int] = [:]
        var oldest: Int64?
        do {
            for row in rows {
                let (state, count, queuedSince) = try row.decode((String, Int64, Int64?).self)
                if let state = PushState(rawValue: state) { counts[state] = Int(count) }
                if let queuedSince { oldest = queuedSince }
            }
        } catch {
            throw StoreError.corrupt.with(detail: "count the outbox: \(error)")
        }
        return OutboxCounts(byState: counts, oldestQueuedAt: oldest)
    }
}

extension PostgresStore {
    public func queueCounts() async throws -> OutboxCounts {
        // One statement, one snapshot; each part through a partial index of the queue. `+ 0`
        // keeps the planner from answering MIN by walking outbox_by_age from the oldest push
        // until a queued one (most of a million rows when the queue is young).
        let rows = try await rows(
            "count the queue",
            """
            SELECT (SELECT COUNT(*) FROM outbox WHERE state = 'queued'),
                (SELECT COUNT(*) FROM outbox WHERE state = 'sending'),
                (SELECT MIN(created_at + 0) FROM outbox WHERE state = 'queued')
            """
        )
        do {
            guard let row = rows.first else { return OutboxCounts(byState: [:], oldestQueuedAt: nil) }
            let (queued, sending, oldest) = try row.decode((Int64, Int64, Int64?).self)
            return OutboxCounts(byState: [.queued: Int(queued), .sending: Int(sending)], oldestQueuedAt: oldest)
        } catch {
            throw StoreError.corrupt.with(detail: "count the queue: \(error)")
        }
    }
}

/// A batch's pushes going back to the queue (retried or requeued), as one statement's columns.
private struct Requeues {
    var ids: [String] = []
    var at: [Int64] = []
    var reasons: [String] = []
    var hasReason: [Bool] = []
    var giveBack: [Bool] = []

    mutating func add(_ completion: PushCompletion) {
        switch completion.disposition {
        case .finish:
            break
        case .retry(let at), .requeue(let at):
            ids.append(completion.pushID)
            self.at.append(at)
            reasons.append(completion.reason ?? "")
            hasReason.append(completion.reason != nil)
            // `requeue`: the push was never tried (its network was unreachable), so the
            // claim's attempt is taken back.
            if case .requeue = completion.disposition {
                giveBack.append(true)
            } else {
                giveBack.append(false)
            }
        }
    }
}

/// A batch's dead tokens, as the columns of the statements that clear them.
private struct DeadTokens {
    var devices: [String] = []
    var tokens: [String] = []
    var reasons: [String] = []
    var hasReason: [Bool] = []

    mutating func add(_ completion: PushCompletion) {
        guard let token = completion.deadToken else { return }
        devices.append(token.deviceID)
        tokens.append(token.token)
        reasons.append(completion.reason ?? "")
        hasReason.append(completion.reason != nil)
    }
}
