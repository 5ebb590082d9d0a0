import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    public func accept(_ ingest: Ingest) async throws -> IngestOutcome {
        try await write { db in
            if let key = ingest.idempotencyKey {
                if let receipt = try Data.fetchOne(
                    db,
                    sql: "SELECT receipt FROM ingests WHERE idempotency_key = ?",
                    arguments: [key]
                ) {
                    return .duplicate(receipt: [UInt8](receipt))
                }
                let now = ingest.pushes.first?.createdAt ?? ingest.message?.createdAt ?? 0
                try db.execute(
                    sql: "INSERT INTO ingests (idempotency_key, receipt, created_at) VALUES (?, ?, ?)",
                    arguments: [key, Data(ingest.receipt), now]
                )
            }
            if let message = ingest.message {
                try db.execute(
                    sql: """
                        INSERT INTO messages
                            (id, user_id, conversation, sender_id, sender_name, sealed_text, created_at, expires_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        message.id, message.userID, message.conversation, message.senderID, message.senderName,
                        Data(message.sealedText), message.createdAt, message.expiresAt,
                    ]
                )
            }
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO outbox
                        (push_id, device_id, kind, subject_id, priority, payload, apns_id, topic, push_type,
                         collapse_id, attempts, next_attempt_at, expires_at, state, last_reason, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            )
            for push in ingest.pushes {
                try insert.execute(arguments: [
                    push.pushID, push.deviceID, push.kind.rawValue, push.subjectID, push.priority, push.payload,
                    push.apnsID, push.topic, push.pushType, push.collapseID, push.attempts, push.nextAttemptAt,
                    push.expiresAt, push.state.rawValue, push.lastReason, push.createdAt, push.updatedAt,
                ])
                try Self.log(db, pushID: push.pushID, at: push.createdAt, state: push.state, reason: push.lastReason)
            }
            return .accepted
        }
    }

    public func push(id: String) async throws -> OutboxEntry? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM outbox WHERE push_id = ?", arguments: [id]).map(Self.entry(from:))
        }
    }

    public func deliveryLog(pushID: String) async throws -> [DeliveryEvent] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM delivery_log WHERE push_id = ? ORDER BY id",
                arguments: [pushID]
            ).compactMap { row in
                guard let state = PushState(rawValue: row["state"]) else { return nil }
                return DeliveryEvent(pushID: row["push_id"], at: row["at"], state: state, reason: row["reason"])
            }
        }
    }

    public func claim(limit: Int, owner: String, now: Int64, leaseUntil: Int64) async throws -> [ClaimedPush] {
        try await write { db in
            // Claims whose owner never came back go back to the queue.
            try db.execute(
                sql: """
                    UPDATE outbox SET state = 'queued', claim_owner = NULL, claim_until = NULL
                    WHERE state = 'sending' AND claim_until < ?
                    """,
                arguments: [now]
            )
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT o.*, d.id AS device_exists, d.messaging_token AS d_messaging, d.voip_token AS d_voip,
                           d.token_dead_reason AS d_dead_reason
                    FROM outbox o LEFT JOIN devices d ON d.id = o.device_id
                    WHERE o.state = 'queued' AND o.next_attempt_at <= ?
                    ORDER BY o.priority DESC, o.created_at ASC
                    LIMIT ?
                    """,
                arguments: [now, limit]
            )
            let take = try db.cachedStatement(
                sql: """
                    UPDATE outbox SET state = 'sending', claim_owner = ?, claim_until = ?, attempts = attempts + 1,
                        updated_at = ?
                    WHERE push_id = ?
                    """
            )
            var claimed: [ClaimedPush] = []
            claimed.reserveCapacity(rows.count)
            for row in rows {
                var entry = try Self.entry(from: row)
                let token: String? = entry.kind == .call ? row["d_voip"] : row["d_messaging"]
                if entry.expiresAt <= now {
                    try Self.finish(db, pushID: entry.pushID, state: .expired, reason: "expired before sending", now: now)
                } else if (row["device_exists"] as String?) == nil {
                    try Self.finish(db, pushID: entry.pushID, state: .skipped, reason: "device_deactivated", now: now)
                } else if let token {
                    try take.execute(arguments: [owner, leaseUntil, now, entry.pushID])
                    try Self.log(db, pushID: entry.pushID, at: now, state: .sending, reason: nil)
                    entry.state = .sending
                    entry.attempts += 1
                    claimed.append(ClaimedPush(entry: entry, deviceToken: token))
                } else {
                    let reason = (row["d_dead_reason"] as String?).map { "token_dead: \($0)" } ?? "no_token"
                    try Self.finish(db, pushID: entry.pushID, state: .skipped, reason: reason, now: now)
                }
            }
            return claimed
        }
    }

    public func complete(_ completions: [PushCompletion], now: Int64) async throws {
        if completions.isEmpty { return }
        try await write { db in
            let requeue = try db.cachedStatement(
                sql: """
                    UPDATE outbox SET state = 'queued', next_attempt_at = ?, last_reason = ?, claim_owner = NULL,
                        claim_until = NULL, updated_at = ?
                    WHERE push_id = ?
                    """
            )
            for completion in completions {
                switch completion.disposition {
                case .finish(let state):
                    try Self.finish(db, pushID: completion.pushID, state: state, reason: completion.reason, now: now)
                case .retry(let at):
                    try requeue.execute(arguments: [at, completion.reason, now, completion.pushID])
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
    }

    public func releaseClaims(owner: String, now: Int64) async throws -> Int {
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
            return OutboxCounts(byState: counts)
        }
    }

    private static func finish(_ db: Database, pushID: String, state: PushState, reason: String?, now: Int64) throws {
        let statement = try db.cachedStatement(
            sql: """
                UPDATE outbox SET state = ?, last_reason = ?, claim_owner = NULL, claim_until = NULL, updated_at = ?
                WHERE push_id = ?
                """
        )
        try statement.execute(arguments: [state.rawValue, reason, now, pushID])
        try log(db, pushID: pushID, at: now, state: state, reason: reason)
    }

    private static func log(_ db: Database, pushID: String, at: Int64, state: PushState, reason: String?) throws {
        let statement = try db.cachedStatement(
            sql: "INSERT INTO delivery_log (push_id, at, state, reason) VALUES (?, ?, ?, ?)"
        )
        try statement.execute(arguments: [pushID, at, state.rawValue, reason])
    }

    static func entry(from row: Row) throws -> OutboxEntry {
        guard let kind = OutboxKind(rawValue: row["kind"]), let state = PushState(rawValue: row["state"]) else {
            throw StoreError.corrupt.with(detail: "push \(row["push_id"] as String? ?? "?") has an unknown kind or state")
        }
        return OutboxEntry(
            pushID: row["push_id"],
            deviceID: row["device_id"],
            kind: kind,
            subjectID: row["subject_id"],
            priority: row["priority"],
            payload: row["payload"],
            apnsID: row["apns_id"],
            topic: row["topic"],
            pushType: row["push_type"],
            collapseID: row["collapse_id"],
            attempts: row["attempts"],
            nextAttemptAt: row["next_attempt_at"],
            expiresAt: row["expires_at"],
            state: state,
            lastReason: row["last_reason"],
            createdAt: row["created_at"],
            updatedAt: row["updated_at"]
        )
    }
}
