import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    public func accept(_ ingest: Ingest) async throws -> IngestOutcome {
        try await write { db in
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
                            (id, user_id, conversation, sender_id, sender_name, sealed_text, created_at, expires_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """
                ).execute(arguments: [
                    message.id, message.userID, message.conversation, message.senderID, message.senderName,
                    Data(message.sealedText), message.createdAt, message.expiresAt,
                ])
            }
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO outbox
                        (push_id, device_id, kind, subject_id, priority, apns_id, topic, push_type,
                         collapse_id, attempts, next_attempt_at, expires_at, state, last_reason, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            )
            let insertPayload = try db.cachedStatement(
                sql: "INSERT INTO outbox_payloads (push_id, payload) VALUES (?, ?)"
            )
            for push in ingest.pushes {
                try insert.execute(arguments: [
                    push.pushID, push.deviceID, push.kind.rawValue, push.subjectID, push.priority,
                    push.apnsID, push.topic, push.pushType, push.collapseID, push.attempts, push.nextAttemptAt,
                    push.expiresAt, push.state.rawValue, push.lastReason, push.createdAt, push.updatedAt,
                ])
                try insertPayload.execute(arguments: [push.pushID, push.payload])
            }
            return .accepted
        }
    }

    public func push(id: String) async throws -> OutboxEntry? {
        try await read { db in
            guard
                var entry = try Row.fetchOne(
                    db,
                    sql: "SELECT \(Self.outboxColumns) FROM outbox WHERE push_id = ?",
                    arguments: [id]
                ).map(Self.entry(from:))
            else { return nil }
            entry.payload =
                try String.fetchOne(db, sql: "SELECT payload FROM outbox_payloads WHERE push_id = ?", arguments: [id])
                ?? ""
            return entry
        }
    }

    /// A push's history without a row per step: the acceptance and the current state are the
    /// outbox row itself; the log holds only what would otherwise be lost, each time a push went
    /// back to the queue (with the provider's reason).
    public func deliveryLog(pushID: String) async throws -> [DeliveryEvent] {
        try await read { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: "SELECT created_at, state, updated_at, last_reason FROM outbox WHERE push_id = ?",
                    arguments: [pushID]
                ), let state = PushState(rawValue: row[1])
            else { return [] }
            let requeued = try Row.fetchAll(
                db,
                sql: "SELECT at, state, reason FROM delivery_log WHERE push_id = ? ORDER BY id",
                arguments: [pushID]
            ).compactMap { row -> DeliveryEvent? in
                guard let state = PushState(rawValue: row[1]) else { return nil }
                return DeliveryEvent(pushID: pushID, at: row[0], state: state, reason: row[2])
            }
            var events = [DeliveryEvent(pushID: pushID, at: row[0], state: .queued, reason: nil)] + requeued
            if state != .queued {
                events.append(DeliveryEvent(pushID: pushID, at: row[2], state: state, reason: row[3]))
            }
            return events
        }
    }

    public func claim(limit: Int, owner: String, now: Int64, leaseUntil: Int64) async throws -> [ClaimedPush] {
        try await write { db in
            // Claims whose owner never came back go back to the queue.
            try db.cachedStatement(
                sql: """
                    UPDATE outbox SET state = 'queued', claim_owner = NULL, claim_until = NULL
                    WHERE state = 'sending' AND claim_until < ?
                    """
            ).execute(arguments: [now])
            // Pick and take in one statement: the due pushes, calls first, then the oldest.
            let taken = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        UPDATE outbox SET state = 'sending', claim_owner = ?, claim_until = ?,
                            attempts = attempts + 1, updated_at = ?
                        WHERE push_id IN (
                            SELECT push_id FROM outbox WHERE state = 'queued' AND next_attempt_at <= ?
                            ORDER BY priority DESC, created_at ASC LIMIT ?)
                        RETURNING \(Self.outboxColumns)
                        """
                ),
                arguments: [owner, leaseUntil, now, now, limit]
            )
            .map(Self.entry(from:))
            .sorted { ($0.priority, -$0.createdAt, $0.pushID) > ($1.priority, -$1.createdAt, $1.pushID) }

            let lookup = try db.cachedStatement(
                sql: "SELECT messaging_token, voip_token, token_dead_reason FROM devices WHERE id = ?"
            )
            let payload = try db.cachedStatement(sql: "SELECT payload FROM outbox_payloads WHERE push_id = ?")
            let giveBack = try db.cachedStatement(
                sql: "UPDATE outbox SET attempts = attempts - 1 WHERE push_id = ?"
            )
            var devices: [String: Row?] = [:]
            var claimed: [ClaimedPush] = []
            claimed.reserveCapacity(taken.count)
            for var entry in taken {
                let device: Row?
                if let known = devices[entry.deviceID] {
                    device = known
                } else {
                    device = try Row.fetchOne(lookup, arguments: [entry.deviceID])
                    devices[entry.deviceID] = device
                }
                // VoIP pushes go to the PushKit token; the rest (alerts, FCM messages and calls)
                // to the messaging token.
                let token: String? = device.flatMap { entry.pushType == "voip" ? $0[1] : $0[0] }
                if entry.expiresAt <= now {
                    try giveBack.execute(arguments: [entry.pushID])
                    try Self.finish(
                        db,
                        pushID: entry.pushID,
                        state: .expired,
                        reason: "expired before sending",
                        now: now
                    )
                } else if device == nil {
                    try giveBack.execute(arguments: [entry.pushID])
                    try Self.finish(db, pushID: entry.pushID, state: .skipped, reason: "device_deactivated", now: now)
                } else if let token {
                    entry.payload = try String.fetchOne(payload, arguments: [entry.pushID]) ?? ""
                    claimed.append(ClaimedPush(entry: entry, deviceToken: token))
                } else {
                    try giveBack.execute(arguments: [entry.pushID])
                    let reason = (device?[2] as String?).map { "token_dead: \($0)" } ?? "no_token"
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
    }

    private static func log(_ db: Database, pushID: String, at: Int64, state: PushState, reason: String?) throws {
        let statement = try db.cachedStatement(
            sql: "INSERT INTO delivery_log (push_id, at, state, reason) VALUES (?, ?, ?, ?)"
        )
        try statement.execute(arguments: [pushID, at, state.rawValue, reason])
    }

    /// The outbox columns in the order `entry(from:)` reads them.
    static let outboxColumns = """
        push_id, device_id, kind, subject_id, priority, '' AS payload, apns_id, topic, push_type, collapse_id, \
        attempts, next_attempt_at, expires_at, state, last_reason, created_at, updated_at
        """

    /// An outbox entry from a row of `outboxColumns`, read by position (the payload, kept in
    /// `outbox_payloads`, is filled in by the caller that needs it).
    static func entry(from row: Row) throws -> OutboxEntry {
        guard let kind = OutboxKind(rawValue: row[2]), let state = PushState(rawValue: row[13]) else {
            throw StoreError.corrupt.with(detail: "push \(row[0] as String? ?? "?") has an unknown kind or state")
        }
        return OutboxEntry(
            pushID: row[0],
            deviceID: row[1],
            kind: kind,
            subjectID: row[3],
            priority: row[4],
            payload: row[5],
            apnsID: row[6],
            topic: row[7],
            pushType: row[8],
            collapseID: row[9],
            attempts: row[10],
            nextAttemptAt: row[11],
            expiresAt: row[12],
            state: state,
            lastReason: row[14],
            createdAt: row[15],
            updatedAt: row[16]
        )
    }
}
